"""Merging one-seed runner records gives the runner's own aggregate; bad merges are refused."""

from __future__ import annotations

import pytest

from replications.gaga.merge import merge
from shared.stats import aggregate


def record(seed: int, auc: float, model: str = "gaga") -> dict:
    return {"paper": "gaga", "dataset": "tolokers", "model": model, "scale": "full", "complete": True,
            "runs": [{"seed": seed, "metrics": {"test_auc": auc}, "train": {"epochs_run": 5}, "wall_seconds": 1.0}],
            "wall_seconds": 2.0, "data_seconds": 0.5, "peak_memory_mb": 10.0 + seed,
            "environment": {"hardware": {}}, "config": {"seed": seed, "paper": {"protocol": {"seeds": [0, 1, 2]}}}}


def test_merge_matches_aggregate_and_orders_seeds():
    out = merge([record(2, 80.0), record(0, 70.0), record(1, 75.0)])
    assert [r["seed"] for r in out["runs"]] == [0, 1, 2]
    assert out["aggregate"] == aggregate([{"test_auc": 70.0}, {"test_auc": 75.0}, {"test_auc": 80.0}])
    assert out["wall_seconds"] == 6.0 and out["peak_memory_mb"] == 12.0 and out["config"]["seed"] is None
    assert out["comparison"][0]["status"] == "no reference"
    assert out["complete"] and out["missing_seeds"] == []


def test_partial_merge_is_not_complete():
    out = merge([record(0, 70.0), record(2, 80.0)])
    assert not out["complete"] and out["missing_seeds"] == [1]


def test_merge_refuses_duplicates_and_mixtures():
    with pytest.raises(ValueError, match="duplicate seeds"):
        merge([record(0, 70.0), record(0, 71.0)])
    with pytest.raises(ValueError, match="disagree"):
        merge([record(0, 70.0), record(1, 71.0, model="mlp")])
    with pytest.raises(ValueError, match="nothing"):
        merge([])
