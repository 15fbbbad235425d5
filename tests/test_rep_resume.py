"""The 1-vs-all recipe's early stopping and its interruption-proof training (replications/rep/train.py).

Resume: on a tiny planted KG, a run interrupted after k steps and run again with the same command ends
bit-identical to an uninterrupted run (embeddings, summary, filtered metrics, global RNG states). A truncated or
corrupted checkpoint is refused with a one-line CheckpointError (a DataError: exit 2 at the entry point), never
half-loaded and never silently restarted from step 0.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from replications.rep import RUN_ONLY_KEYS, hparams
from replications.rep.evaluate import filtered_metrics
from replications.rep.models import KGE
from replications.rep.train import CheckpointError, StateFile, cache_key, fit_one_vs_all, steps_per_epoch, train_or_load
from shared.data import DataError
from shared.seeding import seed_everything
from tests.conftest import compose_cfg

TIMING = {"train_seconds", "step_seconds", "validation_seconds", "sessions", "resumed_at_step", "from_cache"}
STEPS = 96


def planted() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Two 'successor' relations on a line of 40 entities: (train, valid, all true)."""
    triples = torch.tensor([(h, r, h + s) for r, s in enumerate((1, 3)) for h in range(40 - s)])
    triples = triples[torch.randperm(len(triples), generator=torch.Generator().manual_seed(0))]
    return triples[:60], triples[60:], triples


TRAIN, VALID, KNOWN = planted()  # 60 triples -> 120 queries -> 8 steps of 16 per epoch


def hp(**changes):
    return OmegaConf.create({"recipe": "one_vs_all", "lr": 0.1, "batch_size": 16, "n3": 0.01, "eval_every": 0.5,
                             "patience": 100, "checkpoint_minutes": 1.0} | changes)


def mrr(model: KGE, queries: torch.Tensor = VALID) -> dict[str, float]:
    def scores(anchor, r, direction):
        ent, rel = model.entity.detach(), model.relation.detach()
        return model.rank_scores(model.context(ent, rel, anchor, r, direction), ent)

    with torch.no_grad():
        return filtered_metrics(scores, queries, KNOWN)


class Interrupted(Exception):
    pass


class Session:
    """One process's run of the same command: seed, fresh model, train_or_load (the cache on)."""

    def __init__(self, interrupt_at_eval: int | None = None, **changes) -> None:
        self.hp, self.evals, self.interrupt_at = hp(**changes), 0, interrupt_at_eval

    def validate(self) -> float:
        self.evals += 1
        if self.evals == self.interrupt_at:
            raise Interrupted(f"interrupted at evaluation {self.evals}")
        return mrr(self.model)["mrr"]

    def __call__(self, steps: int = STEPS) -> dict:
        seed_everything(7)
        self.model = KGE("complex", 40, 2, 8, 0.0, reciprocal=True, init_scale=1e-3)
        hp_dict = {k: v for k, v in OmegaConf.to_container(self.hp).items() if k != "checkpoint_minutes"}
        return train_or_load(self.model, "planted", TRAIN, self.hp, hp_dict, steps, 7, lambda m, s: None,
                             use_cache=True, validate=self.validate)


def rng_now() -> tuple:
    return torch.get_rng_state(), np.random.get_state()[1].copy(), random.getstate()


@pytest.fixture
def fake_clock(monkeypatch):
    """The checkpoint clock advances one 'second' per reading: with checkpoint_minutes=0.1 a checkpoint is due
    every 6 readings (one per step, one per save), so checkpoints fall between evaluations, and a resumed
    run redoes the steps after the last one."""
    ticks = iter(range(10 ** 9))
    monkeypatch.setattr(StateFile, "now", lambda self: float(next(ticks)))


def state_files(cache: Path) -> list[Path]:
    return sorted((cache / "rep_embeddings").glob("*.state"))


def test_interrupted_run_resumes_bit_identical(fresh_cache, fake_clock) -> None:
    first = Session(checkpoint_minutes=0.1)
    uninterrupted = first()
    entity, relation, metrics = first.model.entity.detach().clone(), first.model.relation.detach().clone(), mrr(first.model)
    rng_after = rng_now()
    assert not state_files(fresh_cache)  # removed once the embeddings are saved
    for f in (fresh_cache / "rep_embeddings").iterdir():  # the cache holds the embeddings now: clear it to train again
        f.unlink()

    with pytest.raises(Interrupted):  # evaluation 9 = step 36 of 96
        Session(interrupt_at_eval=9, checkpoint_minutes=0.1)()
    assert len(state_files(fresh_cache)) == 1 and not list((fresh_cache / "rep_embeddings").glob("*.pt"))
    again = Session(checkpoint_minutes=0.1)
    resumed = again()
    assert resumed["sessions"] == 2 and 0 < resumed["resumed_at_step"] < 36  # steps after the checkpoint redone
    assert torch.equal(again.model.entity, entity) and torch.equal(again.model.relation, relation)
    assert mrr(again.model) == metrics
    strip = {k: v for k, v in uninterrupted.items() if k not in TIMING}
    assert {k: v for k, v in resumed.items() if k not in TIMING} == strip
    assert len(strip["validation"]) == STEPS // 4 and strip["stopped"] == "max_steps"
    after = rng_now()
    assert torch.equal(after[0], rng_after[0]) and np.array_equal(after[1], rng_after[1]) and after[2] == rng_after[2]
    assert not state_files(fresh_cache)
    assert Session(checkpoint_minutes=0.1)()["from_cache"]  # and the same command now loads them


def test_resume_across_an_early_stop(fresh_cache, fake_clock) -> None:
    """Patience 3 stops the planted run early; interrupted before the stop, resumed, it stops at the same step."""
    whole = Session(checkpoint_minutes=0.1, patience=3, eval_every=1.0)
    summary = whole(steps=400)
    entity = whole.model.entity.detach().clone()
    assert summary["stopped"] == "patience" and summary["steps"] < 400
    for f in (fresh_cache / "rep_embeddings").iterdir():
        f.unlink()
    with pytest.raises(Interrupted):
        Session(interrupt_at_eval=len(summary["validation"]) - 1, checkpoint_minutes=0.1, patience=3,
                eval_every=1.0)(steps=400)
    again = Session(checkpoint_minutes=0.1, patience=3, eval_every=1.0)
    resumed = again(steps=400)
    assert resumed["sessions"] == 2 and torch.equal(again.model.entity, entity)
    assert {k: v for k, v in resumed.items() if k not in TIMING} == {k: v for k, v in summary.items() if k not in TIMING}


def test_early_stopping_selects_the_best_validation_embeddings() -> None:
    scripted = iter([0.1, 0.3, 0.2, 0.25, 0.29, 0.9])  # best at evaluation 2; 3 without a new best: stop

    torch.manual_seed(0)
    model = KGE("distmult", 40, 2, 8, 0.0, reciprocal=True, init_scale=1e-3)
    out = fit_one_vs_all(model, TRAIN, hp(patience=3), 1000, 0, lambda m, s: None, validate=lambda: next(scripted))
    per_epoch = steps_per_epoch(len(TRAIN), 16)
    assert out["stopped"] == "patience" and out["steps"] == 5 * per_epoch // 2
    assert [p["val_mrr"] for p in out["validation"]] == [0.1, 0.3, 0.2, 0.25, 0.29]
    assert out["best_step"] == per_epoch and out["best_val_mrr"] == 0.3
    torch.manual_seed(0)
    at_best = KGE("distmult", 40, 2, 8, 0.0, reciprocal=True, init_scale=1e-3)
    fit_one_vs_all(at_best, TRAIN, hp(), per_epoch, 0, lambda m, s: None)  # the same run, cut at the best step
    assert torch.equal(model.entity, at_best.entity) and torch.equal(model.relation, at_best.relation)


def test_the_last_step_is_always_validated() -> None:
    torch.manual_seed(0)
    model = KGE("distmult", 40, 2, 8, 0.0, reciprocal=True, init_scale=1e-3)
    out = fit_one_vs_all(model, TRAIN, hp(eval_every=10.0), 5, 0, lambda m, s: None, validate=lambda: 0.5)
    assert [p["step"] for p in out["validation"]] == [5] and out["best_step"] == 5


def interrupted_state(cache: Path) -> Path:
    with pytest.raises(Interrupted):
        Session(interrupt_at_eval=5, checkpoint_minutes=0.1)()
    (path,) = state_files(cache)
    return path


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty"])
def test_damaged_checkpoint_is_refused_in_one_line(fresh_cache, fake_clock, damage: str) -> None:
    path = interrupted_state(fresh_cache)
    blob = bytearray(path.read_bytes())
    if damage == "truncate":
        blob = blob[:len(blob) // 2]
    elif damage == "flip":
        blob[len(blob) // 2] ^= 0xFF
    else:
        blob = bytearray()
    path.write_bytes(bytes(blob))
    with pytest.raises(CheckpointError, match="delete it to train this run from step 0") as err:
        Session(checkpoint_minutes=0.1)()
    assert isinstance(err.value, DataError) and "\n" not in str(err.value) and str(path) in str(err.value)
    assert path.read_bytes() == bytes(blob)  # refused, not replaced


def test_another_runs_checkpoint_is_refused(tmp_path) -> None:
    mine = StateFile(tmp_path / "a.state", "key-a", 60.0)
    mine.save({"step": 1})
    with pytest.raises(CheckpointError, match="belongs to another run"):
        StateFile(tmp_path / "a.state", "key-b", 60.0).load()
    assert mine.load()["step"] == 1


def test_one_process_trains_a_run_at_a_time(tmp_path) -> None:
    first, second = StateFile(tmp_path / "a.state", "k", 60.0), StateFile(tmp_path / "a.state", "k", 60.0)
    first.acquire()
    try:
        with pytest.raises(CheckpointError, match="another process is training this exact run"):
            second.acquire()
    finally:
        first.release()
    second.acquire()
    second.release()


def test_checkpoint_interval_is_not_part_of_the_key() -> None:
    """checkpoint_minutes changes when a run is saved, never its embeddings, so it is left out of the key."""
    cfg = compose_cfg("paper=rep", "tracker=none", "dataset=fb15k_237", "model=rep_complex")
    table = hparams(cfg)
    assert {"eval_every", "patience", "checkpoint_minutes"} <= table.keys() and "checkpoint_minutes" in RUN_ONLY_KEYS
    base = {k: v for k, v in table.items() if k not in RUN_ONLY_KEYS}
    assert cache_key("d", "complex", base, 10, 1) != cache_key("d", "complex", base | {"patience": 1}, 10, 1)
