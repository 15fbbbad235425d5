"""Atomic writes: all or nothing, and the file mode a plain open() would give (not mkstemp's 0600)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from shared.atomic import atomic_path, save_figure_atomic, write_json_atomic, write_text_atomic


@pytest.fixture
def umask():
    """Set a umask for one test and restore the caller's afterwards."""
    saved = os.umask(0o022)
    yield os.umask
    os.umask(saved)


@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)],
                         ids=["022", "002", "077"])
def test_written_files_follow_the_umask(tmp_path, umask, mask, mode):
    umask(mask)
    write_json_atomic(tmp_path / "r.json", {"a": 1})
    write_text_atomic(tmp_path / "README.md", "x\n")
    with atomic_path(tmp_path / "plot.png") as tmp:
        tmp.write_bytes(b"\x89PNG")
    for name in ("r.json", "README.md", "plot.png"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode, name


def test_failed_block_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("interrupted")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_a_figure_that_fails_to_render_leaves_the_old_file_and_no_part_file(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    target = tmp_path / "plot.png"
    target.write_bytes(b"old")
    fig = plt.figure()

    def broken(path, **kwargs):
        Path(path).write_bytes(b"\x89PNG half")
        raise RuntimeError("renderer died")

    fig.savefig = broken
    with pytest.raises(RuntimeError, match="renderer died"):
        save_figure_atomic(fig, target)
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["plot.png"]
    fig.savefig = lambda path, **kwargs: Path(path).write_bytes(b"\x89PNG new")
    save_figure_atomic(fig, target, dpi=50)
    assert target.read_bytes() == b"\x89PNG new" and not plt.fignum_exists(fig.number)  # written, and closed
