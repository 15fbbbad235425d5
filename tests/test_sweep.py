"""Ranking a sweep: seeds of one setting are averaged, the validation metric decides, in the paper's direction."""

from __future__ import annotations

import json

import pytest

from shared.sweep import jobs, main, rank


def _job(root, n: int, overrides: list[str], val: float, test: float, mode: str | None = None) -> None:
    job = root / str(n)
    (job / ".hydra").mkdir(parents=True)
    (job / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))
    paper = {"name": "p", "select_metric": "val_x", **({"select_mode": mode} if mode else {})}
    seed = int(next(o.split("=")[1] for o in overrides if o.startswith("seed=")))
    record = {"complete": True, "config": {"paper": paper}, "runs": [{"seed": seed}],
              "aggregate": {"val_x": {"mean": val}, "test_x": {"mean": test}}}
    (job / "p" / "d").mkdir(parents=True)
    (job / "p" / "d" / "m.json").write_text(json.dumps(record))


@pytest.mark.parametrize("mode", [None, "min"])
def test_settings_are_averaged_over_seeds_and_ranked_on_validation(tmp_path, mode):
    # lr=0.1: val 0.5 and 0.7 (mean 0.6); lr=0.2: val 0.55 twice. Test numbers favour lr=0.2 and must not matter.
    _job(tmp_path, 0, ["lr=0.1", "seed=1"], 0.5, 0.1, mode)
    _job(tmp_path, 1, ["lr=0.1", "seed=2"], 0.7, 0.1, mode)
    _job(tmp_path, 2, ["lr=0.2", "seed=1"], 0.55, 0.9, mode)
    _job(tmp_path, 3, ["lr=0.2", "seed=2"], 0.55, 0.9, mode)
    (tmp_path / "4" / ".hydra").mkdir(parents=True)  # a job that died before writing a result
    (tmp_path / "4" / ".hydra" / "overrides.yaml").write_text("- lr=0.3\n- seed=1\n")
    ranking = rank(jobs(tmp_path))
    rows = ranking.rows
    assert ranking.metric == "val_x" and len(rows) == 2 and rows[0]["seeds"] == [1, 2]
    assert [(j.name, j.problem) for j in ranking.unranked] == [("4", "failed")]  # listed under the ranking, not dropped
    best = rows[0]["setting"]["lr"]
    assert best == ("0.1" if mode is None else "0.2")  # max: mean 0.6 beats 0.55; min: 0.55 beats 0.6
    assert rows[0]["metrics"]["val_x"] == pytest.approx(0.6 if mode is None else 0.55)


def test_an_empty_folder_is_a_clear_error(tmp_path, capsys):
    assert main([str(tmp_path)]) == 2
    assert "no finished sweep jobs" in capsys.readouterr().err
