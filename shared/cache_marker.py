"""The data cache's marker file, and ``make clean-cache``, which empties only a folder that marker identifies.

$REPLICATIONS_CACHE may name any folder (``REPLICATIONS_CACHE=~/.cache`` once made ``rm -rf`` delete the whole of
~/.cache, pip's files included). So the suite marks a folder as its cache only where nothing else can be in it:
when it creates the folder, finds it empty, or it is the default ~/.cache/replications (a name that is the
suite's own); and ``clean_cache`` empties a folder only when that marker is in it.

    python -m shared.cache_marker clean     # what `make clean-cache` runs
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from shared.atomic import write_text_atomic
from shared.paths import cache_folder

MARKER = ".replications-cache"
SIGNATURE = "replications data cache"  # the marker's first line: a stray file of the same name is not one
TEXT = (f"{SIGNATURE}\nThe replication suite made this folder its data cache. `make clean-cache` empties it "
        "(this file stays); nothing else in it is anyone else's.\n")


def is_marked(folder: Path) -> bool:
    marker = Path(folder) / MARKER
    try:
        return marker.is_file() and marker.read_text(errors="replace").splitlines()[:1] == [SIGNATURE]
    except OSError:
        return False


def claim_cache() -> Path:
    """The data cache (shared.paths.cache_folder), created on first use and marked as the suite's where it is."""
    folder = cache_folder()
    default = not os.environ.get("REPLICATIONS_CACHE")
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    if not is_marked(folder) and (created or default or not any(folder.iterdir())):
        write_text_atomic(folder / MARKER, TEXT)
    return folder


class CacheError(ValueError):
    """The folder is not known to be the suite's cache: it is left alone."""


def _size(path: Path) -> int:
    if path.is_symlink() or not path.is_dir():
        return path.lstat().st_size
    return sum(f.lstat().st_size for f in path.rglob("*") if not f.is_dir() or f.is_symlink())


def clean_cache(folder: Path | None = None) -> str:
    """Empty the suite's data cache (all but its marker) and say what went; CacheError, touching nothing, where the
    folder holds no marker. The folder itself stays: it may be a mount point or the target of a link."""
    folder = Path(folder) if folder is not None else cache_folder()
    named = f"REPLICATIONS_CACHE={os.environ['REPLICATIONS_CACHE']}" if os.environ.get("REPLICATIONS_CACHE") else str(folder)
    if not folder.exists():
        return f"nothing to remove: the data cache {named} does not exist"
    if not folder.is_dir():
        raise CacheError(f"refusing to remove {named}: it is a file, not the suite's cache folder; set REPLICATIONS_CACHE "
                         "to the cache folder (or unset it for ~/.cache/replications)")
    if not is_marked(folder):
        fix = ("a cache made before the marker existed: any data command marks it, or delete it by hand"
               if not os.environ.get("REPLICATIONS_CACHE") else
               "set REPLICATIONS_CACHE to the suite's cache folder, or delete the folder by hand if you are sure it is")
        raise CacheError(f"refusing to empty {named}: it holds no {MARKER} marker, so it is not known to be this suite's "
                         f"data cache (the suite marks the folder it creates); {fix}")
    entries = sorted(p for p in folder.iterdir() if p.name != MARKER)
    if not entries:
        return f"nothing to remove: the data cache {folder} is empty"
    size = sum(_size(p) for p in entries)
    for entry in entries:
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    shown = ", ".join(p.name for p in entries[:6]) + (", ..." if len(entries) > 6 else "")
    return f"removed the data cache {folder}: {len(entries)} entries ({shown}), {size / 2**20:.1f} MiB"


def main(argv: list[str]) -> int:
    if argv != ["clean"]:
        print("usage: python -m shared.cache_marker clean   (empties the suite's data cache, $REPLICATIONS_CACHE)",
              file=sys.stderr)
        return 2
    try:
        print(clean_cache())
    except (CacheError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
