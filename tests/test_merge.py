"""Merging one-seed records gives the record a multi-seed run would, and refuses what it cannot merge."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.merge import merge_records
from shared.stats import summarize

PAPER = (
    "title: t\nreported:\n  - {kind: paper, dataset: d, model: m, metric: acc, value: 50.0, source: T1, verified: true}\n"
    "tolerances: {acc: 1.0}\n"
)


def _paper(tmp_path: Path) -> Path:
    """Paper p's paper.yaml, where merge looks for it: <papers>/p/paper.yaml."""
    path = tmp_path / "p" / "paper.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(PAPER)
    return path


def _record(seed: int, acc: float, complete: bool = True) -> dict:
    return {"paper": "p", "dataset": "d", "model": "m", "scale": "full", "complete": complete,
            "runs": [{"seed": seed, "metrics": {"acc": acc}}], "wall_seconds": 10.0, "data_seconds": 1.0,
            "peak_memory_mb": 100.0 + seed, "config": {"seed": seed}}


def test_merge_recomputes_aggregate_and_status(tmp_path):
    paper = _paper(tmp_path)
    merged = merge_records([_record(2, 52.0), _record(1, 50.0)], paper)
    assert [r["seed"] for r in merged["runs"]] == [1, 2]
    assert merged["aggregate"]["acc"] == summarize([50.0, 52.0])
    assert merged["comparison"][0]["status"] == "reproduced"  # mean 51.0, within 1.0 of 50.0
    assert merged["wall_seconds"] == 20.0 and merged["peak_memory_mb"] == 102.0 and merged["config"]["seed"] is None


def test_merge_refuses_duplicates_and_incomplete(tmp_path):
    paper = _paper(tmp_path)
    with pytest.raises(ValueError, match="twice"):
        merge_records([_record(1, 50.0), _record(1, 51.0)], paper)
    with pytest.raises(ValueError, match="incomplete"):
        merge_records([_record(1, 50.0), _record(2, 51.0, complete=False)], paper)


def _partial(seeds: list[int], config: dict) -> dict:
    """What the runner leaves in <model>.partial.json after finishing these seeds."""
    return {"complete": False, "config": config,
            "runs": [{"seed": s, "metrics": {"acc": 50.0 + s}, "wall_seconds": 5.0} for s in seeds]}


def test_merge_takes_seeds_from_a_partial_file_with_the_same_experiment(tmp_path):
    paper = _paper(tmp_path)
    shard = _record(4, 54.0) | {"config": {"seed": None, "lr": 0.1, "paper": {"protocol": {"seeds": [4]}},
                                            "tracker": {"name": "none"}}}  # tracking is not part of the experiment
    partial = _partial([1, 2, 3], {"seed": None, "lr": 0.1, "paper": {"protocol": {"seeds": [1, 2, 3, 4, 5]}},
                                   "tracker": {"name": "wandb"}})
    merged = merge_records([partial, shard], paper, planned=[1, 2, 3, 4, 5])
    assert [r["seed"] for r in merged["runs"]] == [1, 2, 3, 4]
    assert not merged["complete"] and merged["missing_seeds"] == [5]  # a seed short: never reported as done
    assert merged["wall_seconds"] == 10.0 + 3 * 5.0  # the shard's record plus the partial's finished seeds
    merged = merge_records([partial, shard, _record(5, 55.0) | {"config": shard["config"]}], paper, planned=[1, 2, 3, 4, 5])
    assert merged["complete"] and merged["missing_seeds"] == []


def test_merge_refuses_a_partial_file_of_another_experiment(tmp_path):
    paper = _paper(tmp_path)
    shard = _record(4, 54.0) | {"config": {"seed": 4, "lr": 0.1}}
    with pytest.raises(ValueError, match="different config"):
        merge_records([_partial([1], {"seed": None, "lr": 0.2}), shard], paper)
    with pytest.raises(ValueError, match="at least one finished"):
        merge_records([_partial([1], {"seed": None, "lr": 0.1})], paper)


def test_merge_refuses_seeds_of_another_config(tmp_path):
    """Only which seed a job ran and where it wrote may differ between the records of one merge (issue 41)."""
    paper = _paper(tmp_path)
    one = _record(1, 50.0) | {"config": {"seed": 1, "lr": 0.1, "paths": {"results_dir": "jobs/1"}}}
    two = _record(2, 52.0) | {"config": {"seed": 2, "lr": 0.1, "paths": {"results_dir": "jobs/2"}}}
    assert [r["seed"] for r in merge_records([one, two], paper)["runs"]] == [1, 2]
    with pytest.raises(ValueError, match=r"seeds \[1\] and \[2\] ran different configs \(lr\)"):
        merge_records([one, two | {"config": {**two["config"], "lr": 0.2}}], paper)


def test_merge_refuses_seeds_of_other_uncommitted_code(tmp_path):
    """One commit, but the seeds record different code fingerprints (uncommitted edits): mixed unless allowed."""
    from shared.merge import MixedCodeError

    paper = _paper(tmp_path)
    one, two = _record(1, 50.0), _record(2, 52.0)
    one["runs"][0]["code_fingerprint"], two["runs"][0]["code_fingerprint"] = "a" * 40, "b" * 40
    with pytest.raises(MixedCodeError, match="uncommitted edits"):
        merge_records([one, two], paper)
    marked = merge_records([one, two], paper, allow_mixed_code=True)
    assert marked["code_fingerprint"] is None and marked["mixed_code"] == {"aaaaaaaaaa": [1], "bbbbbbbbbb": [2]}
    two["runs"][0]["code_fingerprint"] = "a" * 40
    assert "mixed_code" not in merge_records([one, two], paper)
