"""The runner on a tiny in-memory paper: seeds, aggregation, atomic result files, determinism."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from shared.config_check import ConfigError
from shared.replication import Replication
from shared.runner import run
from tests.conftest import compose_cfg


class Toy(Replication):
    """Logistic regression on a planted signal; fails on request to test interrupted runs."""

    name = "pshgcn"  # borrows a real paper config so the real composition is exercised

    def __init__(self, paper_file: Path, fail_at_seed: int | None = None) -> None:
        self.paper_file, self.fail_at_seed, self.threads_seen = paper_file, fail_at_seed, []

    def load_data(self, run):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(200, 5, generator=g)
        return x, (x[:, 0] > 0).long()

    def build_model(self, run, data):
        return torch.nn.Linear(5, 2)

    def train(self, run, model, data, seed, log):
        self.threads_seen.append(torch.get_num_threads())  # what the runner pinned for the paper's code
        if seed == self.fail_at_seed:
            raise RuntimeError("interrupted")
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        x, y = data
        for step in range(20):
            noise = 0.1 * torch.randn_like(x)  # seeded by the runner: same seed, same noise
            loss = torch.nn.functional.cross_entropy(model(x + noise), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            log({"loss": float(loss)}, step)
        assert seed in run.seeds and run.model == "pshgcn" and run.output_dir.name == "dblp"
        return {"steps": 20, "_seen_seed": seed}  # "_": handed to evaluate, never stored

    def evaluate(self, run, model, data, seed, summary):
        assert summary["_seen_seed"] == seed  # evaluate sees what train returned for this very seed
        x, y = data
        return {"test_micro_f1": 100 * float((model(x).argmax(1) == y).float().mean())}


@pytest.fixture
def paper_file(tmp_path) -> Path:
    path = tmp_path / "paper.yaml"
    path.write_text(
        "title: toy\nreported:\n  - {kind: paper, dataset: dblp, model: pshgcn, metric: test_micro_f1, value: 99.0,"
        " source: 'Table 1', verified: true}\ntolerances: {test_micro_f1: 5.0}\n"
    )
    return path


def _cfg(tmp_path, *extra):
    return compose_cfg("paper=pshgcn", "dataset=dblp", "tracker=none", f"paths.results_dir={tmp_path / 'results'}",
                       "scale.seeds=[1,2,3]", *extra)


def test_run_writes_complete_result_with_provenance(tmp_path, paper_file):
    default = torch.get_num_threads()
    torch.set_num_threads(2)  # the process's count before the run; the config's `threads` (1) pins every seed
    toy = Toy(paper_file)
    try:
        record = run(_cfg(tmp_path), toy)
        assert torch.get_num_threads() == 2  # restored after the run: the next run of a process pins its own
    finally:
        torch.set_num_threads(default)
    path = tmp_path / "results" / "pshgcn" / "dblp" / "pshgcn.json"
    saved = json.loads(path.read_text())
    assert saved["complete"] and [r["seed"] for r in saved["runs"]] == [1, 2, 3]
    assert all(r["train"] == {"steps": 20} for r in saved["runs"])  # the "_" key reached evaluate only
    row = saved["comparison"][0]
    assert row["n"] == 3 and row["reported"] == 99.0 and row["source"] == "Table 1"
    assert row["status"] == ("reproduced" if abs(row["difference"]) <= 5 else "not reproduced")
    env = saved["environment"]
    for key in ("command", "git_commit", "git_dirty", "versions", "hardware"):
        assert key in env
    # A warm Toy seed can take under 5 ms, which rounds to 0.00 s: check the sum, not positivity.
    total = saved["data_seconds"] + sum(r["wall_seconds"] for r in saved["runs"])
    assert saved["wall_seconds"] == pytest.approx(total, abs=0.02) and saved["wall_seconds"] >= 0
    assert saved["peak_memory_mb"] > 0 and record["aggregate"]
    assert all(r["cpu"] == env["hardware"]["cpu"] and r["git_commit"] == env["git_commit"] for r in saved["runs"])
    assert toy.threads_seen == [1, 1, 1] and saved["config"]["threads"] == 1
    assert env["hardware"]["torch_threads"] == 1 and all(r["torch_threads"] == 1 for r in saved["runs"])


@pytest.mark.parametrize(("before", "override", "pinned"), [(1, "threads=2", 2), (2, "threads=null", 2), (1, "threads=null", 1)])
def test_the_config_threads_pin_every_seed_and_null_keeps_torchs(tmp_path, paper_file, before, override, pinned):
    default = torch.get_num_threads()
    torch.set_num_threads(before)
    toy = Toy(paper_file)
    try:
        record = run(_cfg(tmp_path, override, "scale.seeds=[1]"), toy)
        assert torch.get_num_threads() == before
    finally:
        torch.set_num_threads(default)
    assert toy.threads_seen == [pinned] and record["runs"][0]["torch_threads"] == pinned
    assert record["environment"]["hardware"]["torch_threads"] == pinned


@pytest.mark.parametrize("value", ["0", "1.5", "two"])
def test_a_thread_count_that_is_no_positive_integer_is_refused_before_any_work(tmp_path, paper_file, value):
    toy = Toy(paper_file)
    with pytest.raises(ConfigError, match="threads=.* is invalid: it must be a positive integer"):
        run(_cfg(tmp_path, f"threads={value}"), toy)
    assert toy.threads_seen == []


def test_same_seed_same_numbers(tmp_path, paper_file):
    a = run(_cfg(tmp_path / "a"), Toy(paper_file))
    b = run(_cfg(tmp_path / "b"), Toy(paper_file))
    assert [r["metrics"] for r in a["runs"]] == [r["metrics"] for r in b["runs"]]


def test_interrupted_run_leaves_no_result_and_resumes(tmp_path, paper_file):
    with pytest.raises(RuntimeError, match="interrupted"):
        run(_cfg(tmp_path), Toy(paper_file, fail_at_seed=2))
    folder = tmp_path / "results" / "pshgcn" / "dblp"
    assert not (folder / "pshgcn.json").exists() and not list(folder.rglob("*.part"))
    partial = json.loads((folder / "pshgcn.partial.json").read_text())
    assert partial["complete"] is False and [r["seed"] for r in partial["runs"]] == [1]

    resumed = run(_cfg(tmp_path), Toy(paper_file))
    fresh = run(_cfg(tmp_path / "fresh"), Toy(paper_file))
    assert [r["metrics"] for r in resumed["runs"]] == [r["metrics"] for r in fresh["runs"]]
    assert (folder / "pshgcn.json").exists() and not (folder / "pshgcn.partial.json").exists()


def test_partial_of_another_config_is_ignored(tmp_path, paper_file):
    with pytest.raises(RuntimeError):
        run(_cfg(tmp_path), Toy(paper_file, fail_at_seed=2))
    record = run(_cfg(tmp_path, "model.lr=0.5"), Toy(paper_file))  # other config: all seeds rerun
    assert all("git_commit" in r for r in record["runs"])
