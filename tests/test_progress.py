"""shared.progress: quiet under CI, no bar off a terminal (periodic lines there: tests/test_bad_input_run.py), a bar
with an ETA when forced, and a protocol bar that counts dataset x model x seed (resumed seeds as done, without time)."""

from __future__ import annotations

import io
import re
import sys
import time

import pytest

from replications import replicate
from shared import destination, progress
from shared.runner import run
from tests.test_runner import Toy, _cfg, paper_file  # noqa: F401  (fixture)


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def automatic(monkeypatch):
    """No override from the environment this test runs in: each test sets what it needs."""
    monkeypatch.delenv(progress.FORCE_ENV, raising=False)
    monkeypatch.delenv("CI", raising=False)


def draw_everything(**kwargs) -> None:
    for _ in progress.bar(range(3), desc="train", delay=0, **kwargs):
        time.sleep(0.01)
    with progress.Protocol(2, **kwargs) as p:
        p.start("toy/dblp/toy", 2)
        p.running()
        p.finished(0.5)
        p.resumed()
    progress.write("a line")


def test_ci_prints_nothing_to_stderr_even_on_a_terminal(monkeypatch, capsys):
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    monkeypatch.setenv("CI", "true")
    assert not progress.enabled()
    draw_everything()
    assert tty.getvalue() == ""
    assert capsys.readouterr().out == "a line\n"  # write() is print(): the line itself is not progress

    monkeypatch.delenv("CI")  # the same terminal without CI: bars are drawn
    assert progress.enabled()
    draw_everything()
    assert "train" in tty.getvalue() and "toy/dblp/toy seed 2/2" in tty.getvalue()


def test_not_a_terminal_draws_no_bar_unless_forced(monkeypatch):
    assert not progress.enabled(io.StringIO())  # a log file, a pipe, pytest's capture
    assert progress.style(io.StringIO()) == "lines"  # plain periodic lines instead
    monkeypatch.setenv(progress.FORCE_ENV, "1")
    assert progress.enabled(io.StringIO())
    monkeypatch.setenv(progress.FORCE_ENV, "0")
    assert not progress.enabled(FakeTTY())
    assert progress.enabled(FakeTTY(), force=True) and not progress.enabled(FakeTTY(), force=False)


def test_forced_loop_bar_shows_an_eta():
    out = io.StringIO()
    for _ in progress.bar(range(4), desc="epochs", unit="epoch", file=out, force=True, delay=0, mininterval=0):
        time.sleep(0.02)
    assert re.search(r"epochs:\s+\d+%.*\d/4 \[\d\d:\d\d<\d\d:\d\d, .*epoch/s\]", out.getvalue())


def test_bar_changes_no_items():
    items = [3, 1, 2]
    assert list(progress.bar(items, desc="x", force=False)) == items
    assert list(progress.bar(items, desc="x", file=io.StringIO(), force=True, delay=0)) == items


def test_protocol_eta_is_seeds_left_times_measured_seconds():
    p = progress.Protocol(5, force=False)
    p.start("a", 3)
    p.resumed()  # from a partial file: done, and no time
    p.running()
    assert p.eta() is None  # nothing measured yet
    p.finished(10.0)
    assert p.eta() == pytest.approx(1 * 10.0 + 2 * 10.0)  # a's last seed, then b's two at the mean so far
    p.running()
    p.finished(20.0)
    assert p.eta() == pytest.approx(2 * 15.0)
    p.start("b", 2)
    p.running()
    assert p.eta() == pytest.approx(2 * 15.0)  # b measured nothing yet: the mean of every measured seed
    p.finished(4.0)
    assert p.eta() == pytest.approx(4.0)  # b's own seconds for b's last seed
    p.close()


def test_runner_bar_counts_every_seed_and_resumed_ones(tmp_path, paper_file):  # noqa: F811
    out = io.StringIO()
    with progress.Protocol(3, file=out, force=True) as bar:
        record = run(_cfg(tmp_path), Toy(paper_file), bar)
    assert [r["seed"] for r in record["runs"]] == [1, 2, 3]
    text = out.getvalue()
    assert "3/3 seeds" in text and "pshgcn/dblp/pshgcn seed 3/3" in text and re.search(r"ETA \d\d:\d\d", text)

    with pytest.raises(RuntimeError, match="interrupted"):  # seed 2 fails: seed 1 stays in the partial file
        run(_cfg(tmp_path / "again"), Toy(paper_file, fail_at_seed=2))
    out = io.StringIO()
    with progress.Protocol(3, file=out, force=True) as bar:
        resumed = run(_cfg(tmp_path / "again"), Toy(paper_file), bar)
        assert bar.done == 3 and len(bar.measured["pshgcn/dblp/pshgcn"]) == 2  # seed 1 resumed: no time
    assert [r["metrics"] for r in resumed["runs"]] == [r["metrics"] for r in record["runs"]]
    assert "3/3 seeds" in out.getvalue()


def test_runner_without_a_bar_makes_its_own_and_same_numbers(tmp_path, paper_file, monkeypatch):  # noqa: F811
    quiet = run(_cfg(tmp_path / "quiet"), Toy(paper_file))
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    drawn = run(_cfg(tmp_path / "drawn"), Toy(paper_file))
    assert "3/3 seeds" in tty.getvalue()
    assert [r["metrics"] for r in drawn["runs"]] == [r["metrics"] for r in quiet["runs"]]


def test_replicate_bar_counts_datasets_times_models_times_seeds(tmp_path, monkeypatch):
    monkeypatch.setattr(destination, "COMMITTED", tmp_path / "committed")
    monkeypatch.setattr(replicate.report_all, "main", lambda argv: None)
    monkeypatch.chdir(tmp_path)
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    seen = []

    def fake_run(cfg, replication, bar):  # the runner's calls on the bar, without training anything
        seen.append((cfg.dataset.name, cfg.model.name))
        bar.start(f"{cfg.paper.name}/{cfg.dataset.name}/{cfg.model.name}", len(cfg.paper.protocol.seeds))
        for _ in cfg.paper.protocol.seeds:
            bar.running()
            bar.finished(0.01)
        return {}

    monkeypatch.setattr(replicate, "run", fake_run)
    assert replicate.main(["pshgcn", "dataset=dblp,acm", "model=pshgcn,rgcn", "tracker=none"]) == 0
    assert len(seen) == 4 and "20/20 seeds" in tty.getvalue()  # 2 datasets x 2 models x 5 seeds

