"""Refuse an unwritable results folder, data cache or a missing data mirror before training, not after hours of it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from shared.data.fetch import DataError
from shared.destination import DestinationError
from shared.paths import cache_folder


def _unwritable(folder: Path) -> str | None:
    """Why no file can be created in `folder` (or where it would be created), or None when one can.

    Probes the folder, or its nearest existing parent when it does not exist yet, with a temporary file
    that is removed at once: nothing is left behind, no empty folders either. A probe, not a permission
    check: os.access says yes to root on a read-only mount.
    """
    probe_in = folder
    while not probe_in.exists() and probe_in != probe_in.parent:
        probe_in = probe_in.parent
    if not probe_in.is_dir():
        return f"{probe_in} is a file, not a folder"
    try:
        fd, tmp = tempfile.mkstemp(dir=probe_in, prefix=".write-probe-")
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        return f"{exc.strerror or exc} ({probe_in})"
    return None


def ensure_writable(folder: Path) -> None:
    """Raise DestinationError unless a file can be created in `folder` (or where it would be created)."""
    folder = Path(folder).absolute()
    why = _unwritable(folder)
    if why is not None:
        raise DestinationError(f"cannot write results under {folder}: {why}; choose a writable paths.results_dir=<folder>")


def check_cache() -> None:
    """Raise DataError unless the data cache (shared.paths.cache_folder: REPLICATIONS_CACHE) is writable."""
    value = os.environ.get("REPLICATIONS_CACHE")
    folder = cache_folder().absolute()
    why = _unwritable(folder)
    if why is not None:
        named = f"REPLICATIONS_CACHE={value}" if value else f"{folder} (REPLICATIONS_CACHE is unset)"
        fix = "set REPLICATIONS_CACHE=<a writable folder>" + (", or unset it for ~/.cache/replications" if value else "")
        raise DataError(f"cannot write the data cache {named}: {why}; {fix}")


def check_mirror() -> None:
    """Raise DataError when REPLICATIONS_MIRROR is set but is no folder. A relative value is resolved against the
    working directory (as shared.data.fetch.mirror_dir does): ../shared/data from another folder is not the mirror."""
    value = os.environ.get("REPLICATIONS_MIRROR")
    if not value:
        return
    given = Path(value).expanduser()
    folder = given if given.is_absolute() else Path.cwd() / given
    if folder.is_dir():
        return
    if not given.is_absolute():
        raise DataError(f"REPLICATIONS_MIRROR={value} is a relative path, and from the working directory {Path.cwd()} "
                        f"it is {folder.resolve()}, which does not exist; give an absolute path, e.g. "
                        f"REPLICATIONS_MIRROR=$(realpath {value}) where that folder exists, or unset it to download")
    what = "is a file, not a folder" if folder.exists() else "does not exist"
    raise DataError(f"REPLICATIONS_MIRROR={value} {what}; set it to the data mirror's folder (one holding e.g. "
                    f"tolokers/), or unset it to download the data")


def check_data_folders() -> None:
    """The data mirror a run reads and the cache it writes, before any work."""
    check_mirror()
    check_cache()
