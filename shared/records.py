"""Reading result records from a results folder: the one loop every reader (report, paper pages, merge) uses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# results/<paper>/<dataset>/official.json: the authors' code run (shared.official), a reference for the paper's
# model, never one of the suite's own result records. Every reader of result records skips it by this name.
OFFICIAL_NAME = "official.json"


def is_official(path: Path) -> bool:
    return Path(path).name == OFFICIAL_NAME


def read_json(path: Path) -> tuple[Any, str | None]:
    """(content, None), or (None, what went wrong) for a file that cannot be read as JSON."""
    try:
        return json.loads(path.read_text()), None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"{type(exc).__name__}: {exc}"


def complete_records(folder: Path, pattern: str = "*/*/*.json") -> Iterator[tuple[Path, dict[str, Any]]]:
    """(path, record) of every finished result record matching `pattern` under `folder`, sorted by path: never an
    interrupted run's ``.partial.json``, an official-code record (``is_official``), an unreadable file (the shared
    report lists those) or a side file. A merge naming its missing seeds is finished (``finished``)."""
    for path in sorted(folder.glob(pattern)):
        if path.name.endswith(".partial.json") or is_official(path):
            continue
        record, error = read_json(path)
        if error is None and isinstance(record, dict) and finished(record):
            yield path, record


def finished(record: dict[str, Any]) -> bool:
    """Written whole: a run of every planned seed (``complete``), or a merge (shared.merge --seeds) of the seeds
    done so far that names the ones still to run (``missing_seeds``; the pages say "seeds [...] still to run")."""
    return record.get("complete") is True or ("paper" in record and bool(record.get("missing_seeds")))
