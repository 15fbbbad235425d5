"""Seed-by-seed resume for the authors' code: finished seeds are kept in a partial record beside the logs.

An official run is one process per seed (AMiner: about an hour each), and the official code has no checkpoint of
its own. So every seed that finishes is written at once to ``<logs>/official.partial.json``; the same command run
again after an interruption keeps those seeds and runs only the rest (a seed cut short starts over). Seeds are kept
only when everything that decides their numbers is unchanged: the pinned commit, the patches, the command, the
adapter's source (it prepares the data and parses the log) and the official venv's packages. Anything else found
there is set aside, never merged.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

from shared.atomic import write_json_atomic

PARTIAL_NAME = "official.partial.json"


def setup_key(commit: str, patches: list[dict[str, str]], command: str, adapter: ModuleType,
              packages: list[str]) -> str:
    """sha256 over what decides a seed's numbers (see the module doc)."""
    source = Path(adapter.__file__).read_bytes() if getattr(adapter, "__file__", None) else b""
    parts = {"commit": commit, "patches": patches, "command": command,
             "adapter": hashlib.sha256(source).hexdigest(), "packages": packages}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


class SeedLog:
    """The partial record of one dataset's official run: load what a same-setup run finished, add each new seed."""

    def __init__(self, folder: Path, key: str):
        self.path, self.key = folder / PARTIAL_NAME, key
        self._lock = threading.Lock()  # seeds may finish at once (jobs > 1)
        self.runs: dict[int, dict[str, Any]] = {}
        self.elapsed = 0.0
        self.set_aside = False
        if self.path.exists():
            try:
                found = json.loads(self.path.read_text())
            except (OSError, json.JSONDecodeError):
                found = {}
            if found.get("key") == key:
                self.runs = {int(r["seed"]): r for r in found.get("runs", [])}
                self.elapsed = float(found.get("elapsed_seconds", 0.0))
            else:
                self.set_aside = True  # another setup's seeds: never merged (overwritten by this run's first seed)

    def kept(self, seeds: list[int]) -> dict[int, dict[str, Any]]:
        return {s: self.runs[s] for s in seeds if s in self.runs}

    def add(self, run: dict[str, Any], elapsed: float) -> None:
        with self._lock:
            self.runs[int(run["seed"])] = run
            write_json_atomic(self.path, {"key": self.key, "elapsed_seconds": round(self.elapsed + elapsed, 2),
                                          "runs": [self.runs[s] for s in sorted(self.runs)]})

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
