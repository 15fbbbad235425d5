"""Atomic writes: a reader sees the old file or the complete new one, never half of one."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def current_umask() -> int:
    mask = os.umask(0)  # the only way to read it is to set it: put it straight back
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """Yield a temporary path beside `target`; rename it onto `target` only if the block succeeds."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        # mkstemp creates the file 0600; give it the mode a plain open() would (0666 less the umask).
        os.chmod(tmp_path, 0o666 & ~current_umask())
        os.replace(tmp_path, target)
    finally:
        tmp_path.unlink(missing_ok=True)


def write_text_atomic(target: Path, text: str) -> None:
    with atomic_path(target) as tmp:
        tmp.write_text(text)


def write_json_atomic(target: Path, obj: Any) -> None:
    write_text_atomic(target, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


class _Unchanged(Exception):
    """Raised inside atomic_path to drop the new file: the old one shows the same image."""


def same_image(new: Path, old: Path) -> bool:
    """Equal bytes, or equal pixels (PNG compressors differ between machines: an equal image is not re-written)."""
    from PIL import Image, UnidentifiedImageError

    if not old.is_file():
        return False
    if new.read_bytes() == old.read_bytes():
        return True
    try:
        with Image.open(new) as a, Image.open(old) as b:
            return (a.mode, a.size) == (b.mode, b.size) and a.tobytes() == b.tobytes()
    except (OSError, UnidentifiedImageError):
        return False


def save_figure_atomic(fig, target: Path, dpi: float | None = None) -> bool:
    """Write a matplotlib figure as a PNG atomically, then close it (open figures pile up over a sweep); True when
    written. Nothing of the machine goes in (matplotlib's default style, not a local matplotlibrc; no 'Software'
    version stamp), and a file already showing the same pixels is left untouched, mtime and all (issue 38: `make
    report` rewrote unchanged figures)."""
    import matplotlib.pyplot as plt

    try:
        with atomic_path(target) as tmp:
            with plt.style.context("default"):
                fig.savefig(tmp, format="png", dpi=dpi, metadata={"Software": None})
            if same_image(tmp, Path(target)):
                raise _Unchanged
    except _Unchanged:
        return False
    finally:
        plt.close(fig)
    return True
