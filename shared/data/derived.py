"""Files the cache derives from checksummed sources (extracted members, processed tensors), verified before use.

A derived file is written atomically and then stamped: ``<file>.stamp.json`` beside it records its size and
sha256. Before each use the file is checked against its stamp; a file without a stamp (written before
stamps, or by a run interrupted between the two writes), truncated or altered is treated as absent, so the
caller rebuilds it from its verified source instead of reading half a node.dat or a corrupt tensor file.
An extracted folder is stamped as a whole: one stamp listing every member's size and sha256.
Writers of one entry take turns (an flock on ``.<name>.lock`` beside it); readers check under a shared lock.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from shared.atomic import atomic_path, write_json_atomic
from shared.data.fetch import no_space
from shared.exclusive import file_lock, lock_beside

T = TypeVar("T")


def sha256_of(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".stamp.json")


def _describe(path: Path) -> dict[str, Any]:
    if path.is_dir():
        return {"files": {str(p.relative_to(path)): [p.stat().st_size, sha256_of(p)]
                          for p in sorted(path.rglob("*")) if p.is_file()}}
    return {"size": path.stat().st_size, "sha256": sha256_of(path)}


def stamp(path: Path) -> None:
    """Record what `path` (a file or a folder) holds now: call it right after writing it."""
    write_json_atomic(stamp_path(path), _describe(path))


def intact(path: Path) -> bool:
    """True when `path` exists and matches its stamp (sizes first: a truncated file costs no hashing)."""
    stamp_file = stamp_path(path)
    if not path.exists() or not stamp_file.exists():
        return False
    try:
        recorded = json.loads(stamp_file.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    if path.is_dir():
        files = recorded.get("files") if isinstance(recorded, dict) else None
        if not isinstance(files, dict):
            return False
        present = {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()}
        if present != set(files) or any((path / n).stat().st_size != s for n, (s, _) in files.items()):
            return False
        return all(sha256_of(path / n) == h for n, (_, h) in files.items())
    if not isinstance(recorded, dict) or recorded.get("size") != path.stat().st_size:
        return False
    return recorded.get("sha256") == sha256_of(path)


def discard(path: Path) -> None:
    """Remove a derived file or folder and its stamp (it is rebuilt from its source)."""
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    stamp_path(path).unlink(missing_ok=True)


def cached_file(path: Path, build: Callable[[], T], save: Callable[[T, Path], None],
                read: Callable[[Path], T]) -> T:
    """read(path) when the cached file is intact; else build() it, save it atomically and stamp it.

    Safe for parallel runs: checked and read under a shared lock (``.<name>.lock`` beside it), built under an
    exclusive one; a run that finds an intact file once it holds that lock reads it instead of building.
    """
    lock = lock_beside(path)
    with file_lock(lock, shared=True):
        if intact(path):
            return read(path)
    with file_lock(lock):
        if intact(path):  # built by another run while this one waited
            return read(path)
        if path.exists():
            print(f"note: rebuilding {path}: it does not match the size and sha256 recorded when it was made")
            discard(path)
        value = build()
        with atomic_path(path) as tmp:  # a temporary name of this writer's own, renamed into place
            try:
                save(value, tmp)
            except OSError as exc:  # a full disk: one line, not a traceback (the temporary file goes with atomic_path)
                if full := no_space(exc, f"writing {path.name}"):
                    raise full from None
                raise
        stamp(path)
    return value
