"""Elastic expert-parallel training: checkpoints resume exactly, the model learns the planted chain, and under
torchrun elastic a rank that leaves and rejoins (2 -> 1 -> 2 local processes, gloo) leaves the loss curve
where an uninterrupted single-process run puts it."""

from __future__ import annotations

import math

import pytest
import torch

from replications.moesys.data import MarkovTokens
from replications.moesys.elastic import CKPT, train
from replications.moesys.elastic_run import TINY, run

SMALL = {**TINY, "steps": 12, "step_sleep": 0.0}


def test_batches_are_a_function_of_seed_and_step_and_follow_the_chain():
    data = MarkovTokens(vocab=16, branching=2, chain_seed=0)
    a, b = data.batch(1, 5, 4, 9), data.batch(1, 5, 4, 9)
    assert torch.equal(a, b) and not torch.equal(a, data.batch(1, 6, 4, 9))
    succ = data.successors
    for row in a:
        for prev, nxt in zip(row[:-1], row[1:]):
            assert int(nxt) in succ[int(prev)].tolist()


def test_resuming_from_a_checkpoint_continues_the_run_bit_for_bit(tmp_path):
    reference = [r["loss"] for r in train(SMALL)]
    first = train({**SMALL, "steps": 7}, tmp_path)  # checkpoint after step 4 (ckpt_every 5) and at the end (7)
    assert (tmp_path / CKPT).exists()
    second = train(SMALL, tmp_path)
    assert second[0]["step"] == 7 and second[0]["resumed_from"] == 7
    assert [r["loss"] for r in first + second] == reference


def test_a_wrong_checkpoint_is_refused(tmp_path):
    train({**SMALL, "steps": 5}, tmp_path)
    wider = {**SMALL, "model": {**SMALL["model"], "d_model": 64}}
    with pytest.raises((ValueError, RuntimeError)):
        train(wider, tmp_path)


def test_the_model_learns_the_planted_chain():
    rows = train({**TINY, "step_sleep": 0.0})
    first, last = rows[0]["loss"], rows[-1]["loss"]
    assert first == pytest.approx(math.log(TINY["data"]["vocab"]), abs=0.3)
    assert last < 0.7 * first


@pytest.mark.slow
def test_rank_leaves_and_rejoins_under_torchrun_elastic(tmp_path):
    out = run(TINY, tmp_path, leave_at=12, rejoin_at=24, timeout=170)
    assert out["phases"] == [2, 1, 2]
    assert [r["step"] for r in out["curve"]] == list(range(TINY["steps"]))
    assert out["max_abs_diff"] < 1e-4  # the same curve as the uninterrupted run (float summation order aside)
    rows, every = out["rows"], TINY["ckpt_every"]
    for i in range(1, len(rows)):
        if rows[i]["world"] != rows[i - 1]["world"]:  # a change: resumed from the last checkpoint written
            last = max(r["step"] for r in rows[:i])
            assert rows[i]["resumed_from"] in {(last + 1) // every * every, (last + 1) // every * every - every}
            assert rows[i]["saved_by_world"] == rows[i - 1]["world"]
            assert rows[i]["step"] == rows[i]["resumed_from"]
