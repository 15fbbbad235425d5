"""bench_steps --update (how the fused-L1 TransE rows were re-measured): only the measured rows change, each with
its own provenance; the other rows and the file's own record stay as they were."""

from __future__ import annotations

import argparse
import json

import pytest

from replications.rep import bench_steps


def row(dataset: str, model: str, per_step: float) -> dict:
    return {"dataset": dataset, "model": model, "cpu_seconds_per_step": per_step}


def test_update_replaces_only_the_measured_rows_in_place(tmp_path) -> None:
    out = tmp_path / "bench_steps.json"
    old = {"rows": [row("fb", "transe", 0.76), row("fb", "complex", 0.05), row("wn", "transe", 0.67)],
           "command": "bench_steps.py --steps 1", "git_commit": "old"}
    out.write_text(json.dumps(old))
    args = argparse.Namespace(steps=10)
    bench_steps.update(out, [row("wn", "transe", 0.09), row("fb", "transe", 0.11)], args, {"how": "test"},
                       {"git_commit": "new", "git_dirty": False})
    got = json.loads(out.read_text())
    assert [(r["dataset"], r["model"], r["cpu_seconds_per_step"]) for r in got["rows"]] == [
        ("fb", "transe", 0.11), ("fb", "complex", 0.05), ("wn", "transe", 0.09)]
    assert "measured" not in got["rows"][1] and got["rows"][0]["measured"]["git_commit"] == "new"
    assert got["rows"][0]["measured"]["steps_timed"] == 10
    assert got["command"] == "bench_steps.py --steps 1" and got["git_commit"] == "old"
    assert got["updated_rows"][0]["rows"] == [["wn", "transe"], ["fb", "transe"]]


def test_update_without_a_file_is_refused_in_one_line(tmp_path) -> None:
    with pytest.raises(SystemExit, match="--update needs an existing --out file"):
        bench_steps.main(["--update", "--out", str(tmp_path / "absent.json")])
