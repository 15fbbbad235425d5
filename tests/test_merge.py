"""Merging one-seed records gives the record a multi-seed run would, and refuses what it cannot merge."""

from __future__ import annotations

import pytest

from shared.merge import merge_records
from shared.stats import summarize

PAPER = (
    "title: t\nreported:\n  - {dataset: d, model: m, metric: acc, value: 50.0, source: T1, verified: true}\n"
    "tolerances: {acc: 1.0}\n"
)


def _record(seed: int, acc: float, complete: bool = True) -> dict:
    return {"paper": "p", "dataset": "d", "model": "m", "scale": "full", "complete": complete,
            "runs": [{"seed": seed, "metrics": {"acc": acc}}], "wall_seconds": 10.0, "data_seconds": 1.0,
            "peak_memory_mb": 100.0 + seed, "config": {"seed": seed}}


def test_merge_recomputes_aggregate_and_status(tmp_path):
    paper = tmp_path / "paper.yaml"
    paper.write_text(PAPER)
    merged = merge_records([_record(2, 52.0), _record(1, 50.0)], paper)
    assert [r["seed"] for r in merged["runs"]] == [1, 2]
    assert merged["aggregate"]["acc"] == summarize([50.0, 52.0])
    assert merged["comparison"][0]["status"] == "reproduced"  # mean 51.0, within 1.0 of 50.0
    assert merged["wall_seconds"] == 20.0 and merged["peak_memory_mb"] == 102.0 and merged["config"]["seed"] is None


def test_merge_refuses_duplicates_and_incomplete(tmp_path):
    paper = tmp_path / "paper.yaml"
    paper.write_text(PAPER)
    with pytest.raises(ValueError, match="twice"):
        merge_records([_record(1, 50.0), _record(1, 51.0)], paper)
    with pytest.raises(ValueError, match="incomplete"):
        merge_records([_record(1, 50.0), _record(2, 51.0, complete=False)], paper)
