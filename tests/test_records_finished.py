"""Which files under a results root are result records: whole runs and merges that name their missing seeds."""

from __future__ import annotations

import json
from pathlib import Path

from shared.records import complete_records


def write(root: Path, name: str, content: object) -> None:
    path = root / "p" / "d" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content))


def test_only_finished_records_are_listed(tmp_path: Path) -> None:
    write(tmp_path, "whole.json", {"paper": "p", "complete": True})
    write(tmp_path, "merged.json", {"paper": "p", "complete": False, "missing_seeds": [2, 3]})
    write(tmp_path, "stopped.json", {"paper": "p", "complete": False})  # neither whole nor a named merge
    write(tmp_path, "whole.partial.json", {"complete": False, "runs": [], "config": {}})
    write(tmp_path, "truncated.json", '{"paper": "p", "compl')
    write(tmp_path, "official.json", {"paper": "p", "complete": True})  # the authors' code: a reference, not ours
    assert [p.name for p, _ in complete_records(tmp_path)] == ["merged.json", "whole.json"]
