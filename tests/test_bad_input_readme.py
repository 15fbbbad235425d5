"""Issue 38, "the first command changes only its own result", and the README (a newcomer's first hour).

- `make report` after a run leaves README.md as it was: its durations come from results/timings.json
  (tests/test_readme_times.py covers shared.readme_times itself; here the call site in replications.report).
- Figures render byte-identically on any machine and an unchanged figure is not rewritten (mtime kept).
- `make test` prints the 20 slowest tests; the README stays short and names what a newcomer needs.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from shared.paths import REPO_ROOT


def _row(metric: str, dataset: str, model: str, mean: float, reported: float | None = None):
    from shared.report.content import Row

    return Row(paper="p", dataset=dataset, model=model, metric=metric, mean=mean, std=0.5, n=3, reported=reported,
               kind=None, source=None, copied_by=None, verified=None, difference=None, status="no reference", others=(),
               missing_seeds=(), cpus=("X",), gpu=None, threads=1, wall_seconds=1)


ROWS = [_row("test_acc", d, m, 60.0 + i, reported=61.0) for i, (d, m) in enumerate(
    [("a", "mine"), ("a", "base"), ("b", "mine"), ("b", "base")])] + [_row("test_f1", "a", "mine", 0.4)]


def test_make_report_after_a_run_leaves_the_readme_alone(tmp_path, monkeypatch):
    """The README's first command then `make report` turned "3.5 min" into "7.6 min": the report's call site now
    reads only the committed reference timing, which no run writes."""
    import replications.report as cli
    from shared import readme_times

    results = tmp_path / "results"
    record = {"paper": "p", "dataset": "d", "model": "m", "scale": "full", "complete": True, "wall_seconds": 210.0,
              "runs": [], "aggregate": {}, "comparison": [], "environment": {"hardware": {"cpu": "AMD EPYC"}}}
    (results / "p" / "d").mkdir(parents=True)
    (results / "p" / "d" / "m.json").write_text(json.dumps(record))
    readme = tmp_path / "README.md"
    readme.write_text("the cell took <!-- wall-time p/d/m -->?<!-- /wall-time -->\n")
    readme_times.update(readme, results)
    before = readme.read_text()
    assert "3.5 min" in before
    (results / "p" / "d" / "m.json").write_text(json.dumps({**record, "wall_seconds": 456.0}))  # a loaded re-run
    monkeypatch.setattr(cli, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(cli, "RESULTS", results)
    monkeypatch.setattr(cli.report, "main", lambda argv, hooks: 0)  # the pages are not what this test is about
    assert cli.main([]) == 0
    assert readme.read_text() == before


def test_the_same_figure_renders_the_same_bytes_and_an_unchanged_one_is_not_rewritten(tmp_path):
    from PIL import Image

    from shared.report.plot import plot_paper

    first, second = tmp_path / "a.png", tmp_path / "b.png"
    plot_paper("p", ROWS, ("mine",), first)
    plot_paper("p", ROWS, ("mine",), second)
    assert first.read_bytes() == second.read_bytes()
    assert "Software" not in Image.open(first).info  # no matplotlib version stamp in the file
    os.utime(first, (1_000_000_000, 1_000_000_000))
    plot_paper("p", ROWS, ("mine",), first)
    assert first.stat().st_mtime == 1_000_000_000, "an unchanged figure was rewritten"
    plot_paper("p", [*ROWS[:-1], _row("test_f1", "a", "mine", 0.9)], ("mine",), first)  # new data: new file
    assert first.stat().st_mtime != 1_000_000_000 and first.read_bytes() != second.read_bytes()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left


def test_an_equal_image_compressed_otherwise_is_kept(tmp_path):
    """PNG compressors differ between machines (zlib vs zlib-ng): equal pixels keep the committed file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    from shared.atomic import save_figure_atomic

    target = tmp_path / "fig.png"
    fig = plt.figure(figsize=(2, 1))
    fig.text(0.1, 0.5, "same")
    assert save_figure_atomic(fig, target, dpi=50)
    Image.open(target).save(target, compress_level=1)  # the same pixels, other bytes
    stored = target.read_bytes()
    fig = plt.figure(figsize=(2, 1))
    fig.text(0.1, 0.5, "same")
    assert not save_figure_atomic(fig, target, dpi=50) and target.read_bytes() == stored


def test_a_local_matplotlib_style_changes_no_figure(tmp_path):
    """A machine's matplotlibrc (another font, line width, save colour) must not reach the committed figures."""
    import matplotlib
    from matplotlib import font_manager

    from shared.report.plot import plot_paper

    plot_paper("p", ROWS, ("mine",), tmp_path / "default.png")
    with matplotlib.rc_context({"font.family": "serif", "lines.linewidth": 5, "savefig.facecolor": "red",
                                "figure.dpi": 33, "savefig.bbox": "tight"}):
        plot_paper("p", ROWS, ("mine",), tmp_path / "local.png")
    assert (tmp_path / "default.png").read_bytes() == (tmp_path / "local.png").read_bytes()
    # The font is matplotlib's own file, not a system copy of DejaVu Sans of another version.
    found = Path(font_manager.findfont(font_manager.FontProperties(family="DejaVu Sans")))
    assert Path(matplotlib.get_data_path()) in found.parents, f"DejaVu Sans resolves to {found}, not matplotlib's own"


class Reversed(set):
    """A set that iterates the other way round: what another PYTHONHASHSEED does to a set of (kind, start, end)."""

    def __iter__(self):
        return iter(sorted(set(super().__iter__()), reverse=True))


def test_example_form_draws_its_boxes_in_one_order_whatever_the_set_order():
    """Overlapping entity boxes were drawn in set order, which PYTHONHASHSEED changes: a different
    results/mmlayout/example_form.png on every `make report`."""
    import numpy as np

    from replications.mmlayout.report import _draw_example
    from shared.report.plot import fixed_style

    form = SimpleNamespace(boxes=[[10, 10, 60, 30], [20, 15, 80, 40], [15, 12, 70, 35], [30, 20, 90, 50]])
    gold = {("HEADER", 0, 1), ("QUESTION", 1, 2), ("ANSWER", 0, 2), ("OTHER", 2, 3), ("ANSWER", 0, 3)}
    pred = {("HEADER", 0, 1), ("ANSWER", 1, 3), ("QUESTION", 0, 2)}
    digests = []
    for kind in (set, Reversed):
        with fixed_style() as plt:
            fig = _draw_example(plt, np.full((60, 100), 200, dtype=np.uint8), form,
                                [("gold", kind(gold), None), ("pred", kind(pred), kind(gold))], "x")
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=40)
            plt.close(fig)
        digests.append(hashlib.sha256(buf.getvalue()).hexdigest())
    assert digests[0] == digests[1]


def _make_dry_run(target: str, *args: str) -> str:
    out = subprocess.run(["make", "-n", "--no-print-directory", target, *args], capture_output=True, text=True,
                         cwd=REPO_ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.skipif(not (REPO_ROOT / ".venv" / ".installed").exists(), reason="make -n would plan the venv first")
def test_make_test_prints_the_slowest_tests_and_readme_times_is_its_own_command():
    assert "pytest -q --durations=20" in _make_dry_run("test")
    assert "-m shared.readme_times" not in _make_dry_run("report")
    assert '-m shared.readme_times --load "$load"' in _make_dry_run("readme-times", "load=alone")


def test_the_readme_is_short_and_names_what_a_newcomer_needs():
    text = (REPO_ROOT / "README.md").read_text()
    assert len(text) < 8000, f"README.md is {len(text)} characters: keep it under 8,000 (details go to the packages)"
    for needed in ("make venv", "make test", "make smoke", "apt-get install tesseract-ocr tesseract-ocr-eng",
                   "make clean-cache", ".replications-cache", "wandb/offline-run-*", "wandb sync", "$WANDB_DIR",
                   "OFFICIAL_CODE_DIR", "make readme-times", "results/timings.json"):
        assert needed in text, f"README.md does not mention {needed}"


def test_the_pages_stamp_is_the_newest_code_commit_so_committing_results_does_not_move_it(tmp_path):
    """The first command then `make report` rewrote the stamp line of every summary page (HEAD moved with each
    results commit); the stamp is now the newest commit outside results/."""
    import subprocess

    from shared.report.content import generation_stamp

    def git(*args):
        return subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    git("config", "user.email", "t@t")
    git("config", "user.name", "t")
    (tmp_path / "code.py").write_text("x = 1\n")
    (tmp_path / "results").mkdir()
    git("add", "-A")
    git("commit", "-qm", "code")
    code = git("rev-parse", "HEAD").strip()
    (tmp_path / "results" / "r.json").write_text("{}\n")
    git("add", "-A")
    git("commit", "-qm", "results")
    assert generation_stamp(tmp_path / "results")[0] == code
