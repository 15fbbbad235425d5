"""Refuse an unwritable results folder before training, not after hours of it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from shared.destination import DestinationError


def ensure_writable(folder: Path) -> None:
    """Raise DestinationError unless a file can be created in `folder` (or where it would be created).

    Probes the folder, or its nearest existing parent when it does not exist yet, with a temporary file
    that is removed at once: nothing is left behind, no empty folders either. A probe, not a permission
    check: os.access says yes to root on a read-only mount.
    """
    folder = Path(folder).absolute()
    probe_in = folder
    while not probe_in.exists() and probe_in != probe_in.parent:
        probe_in = probe_in.parent
    fix = "choose a writable paths.results_dir=<folder>"
    if not probe_in.is_dir():
        raise DestinationError(f"cannot write results under {folder}: {probe_in} is a file, not a folder; {fix}")
    try:
        fd, tmp = tempfile.mkstemp(dir=probe_in, prefix=".write-probe-")
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise DestinationError(f"cannot write results under {folder}: {exc.strerror or exc} ({probe_in}); {fix}") from exc
