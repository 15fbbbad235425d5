"""Base-model training, two recipes (``recipe`` in the model config):

``one_vs_all`` (DistMult / ComplEx; Lacroix et al. 2018, facebookresearch/kbc ``learn.py``): every training
triple (h, r, t) also gives the reciprocal query (t, r + R, ?); each query is scored against all entities
with a softmax cross-entropy on the true answer, plus the weighted N3 penalty
``n3 * sum(|lhs|^3 + |rel|^3 + |rhs|^3) / batch`` on the batch's factors (ComplEx: moduli of the complex
coordinates), Adagrad, N(0, 1) * init_scale initialisation, one shuffled pass per epoch (last batch partial).
Early stopping on the filtered validation MRR every ``eval_every`` epochs (``patience`` evaluations without a
new best; the best-validation embeddings are kept), and a checkpoint of the whole training state every
``checkpoint_minutes`` under the cache, from which the same command resumes bit-identically (``StateFile``).

``negative_sampling`` (below): the RotatE repo recipe.

Loss (RotatE repo ``model.py: train_step``), per positive (h, r, t) and K negatives:
    -(w * log sigmoid(s_pos) + w * sum_k softmax(adv * s_neg)_k log sigmoid(-s_neg_k)) / 2
with w the subsampling weight 1 / sqrt(6 + #(h, r) + #(t, r^-1)), corrupting heads and tails in
alternate batches, Adam, learning rate divided by 10 at half the steps, and the repo's L3
regulariser for DistMult/ComplEx. Changes for the CPU: the K negatives of a batch are shared by all
its positives (DGL-KE / Graph4KG "chunk" sampling), so the negative scores are one matrix product;
entity rows get sparse gradients and ``SparseAdam`` (lazy Adam: untouched rows keep their moments),
and the L3 term covers the rows a batch uses rather than the whole table, so a step costs O(batch),
not O(#entities) (dense Adam on WN18RR's 41k entities was ~7x slower per step, measured here).
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import math
import os
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from replications.rep.models import KGE, context
from shared import progress
from shared.atomic import atomic_path
from shared.data import DataError, cache_dir
from shared.data.derived import intact, stamp
from shared.replication import LogFn

SUBSAMPLING_OFFSET = 6.0  # was 4.0 before the official same-batch check found the difference; part of the cache key


def subsampling_weights(train: Tensor) -> Tensor:
    h, r, t = train[:, 0], train[:, 1], train[:, 2]
    n_rel = int(r.max()) + 1
    counts = []
    for key in (h * 2 * n_rel + r, t * 2 * n_rel + n_rel + r):  # (h, r) and (t, r^-1)
        _, inverse, count = torch.unique(key, return_inverse=True, return_counts=True)
        counts.append(count[inverse])
    # RotatE repo (dataloader.py count_frequency): each of the two counts is set to 4 at its first occurrence and
    # grows by 1 after, i.e. 3 + #; their sum is 6 + #(h, r) + #(t, r^-1) (results/rep/official_loss_check.json)
    return (SUBSAMPLING_OFFSET + counts[0] + counts[1]).float().rsqrt()


def fit(model: KGE, train: Tensor, hp: Any, steps: int, seed: int, log: LogFn, log_every: int = 200) -> dict[str, Any]:
    device = model.entity.device
    gen = torch.Generator().manual_seed(seed)
    train = train.to(device)
    weights = subsampling_weights(train.cpu()).to(device)
    opts = [torch.optim.SparseAdam([model.entity], lr=hp.lr), torch.optim.Adam([model.relation], lr=hp.lr)]
    decay_at = int(steps * hp.lr_decay_at) if hp.lr_decay_at else None
    n, batch, num_ent = len(train), int(hp.batch_size), model.entity.shape[0]
    perm, cursor, losses = torch.randperm(n, generator=gen), 0, []
    for step in progress.bar(range(steps), desc="train", unit="step"):
        if cursor + batch > n:
            perm, cursor = torch.randperm(n, generator=gen), 0
        idx = perm[cursor:cursor + batch].to(device)
        cursor += batch
        direction = 1 if step % 2 == 0 else -1  # RotatE repo: alternating tail-batch / head-batch
        triples, w = train[idx], weights[idx]
        anchor, target = (triples[:, 0], triples[:, 2]) if direction == 1 else (triples[:, 2], triples[:, 0])
        negatives = torch.randint(num_ent, (int(hp.negatives),), generator=gen).to(device)
        rows = [F.embedding(i, model.entity, sparse=True) for i in (anchor, target, negatives)]
        rel = model.relation[triples[:, 1]]
        q = context(model.kind, rows[0], rel, direction, model.embedding_range)
        pos = F.logsigmoid(model.match_pairs(q, rows[1]))
        neg_scores = model.match(q, rows[2])
        if hp.adversarial_temperature:
            p = torch.softmax(neg_scores * hp.adversarial_temperature, dim=1).detach()
        else:
            p = torch.full_like(neg_scores, 1.0 / neg_scores.shape[1])
        neg = (p * F.logsigmoid(-neg_scores)).sum(1)
        loss = -((w * pos).sum() + (w * neg).sum()) / (2 * w.sum())
        if hp.regularization:
            l3 = sum(x.abs().pow(3).sum() for x in rows) + rel.abs().pow(3).sum()
            loss = loss + hp.regularization * l3
        for opt in opts:
            opt.zero_grad(set_to_none=True)
        loss.backward()
        for opt in opts:
            opt.step()
        if decay_at and step + 1 == decay_at:
            for group in (g for opt in opts for g in opt.param_groups):
                group["lr"] /= 10.0
        losses.append(loss.item())
        if not math.isfinite(losses[-1]):
            raise FloatingPointError(f"loss became {losses[-1]} at step {step}; lower model.lr")
        if (step + 1) % log_every == 0:
            log({"train_loss": sum(losses[-log_every:]) / log_every}, step + 1)
    return {"steps": steps, "final_loss": sum(losses[-50:]) / max(1, len(losses[-50:]))}


def reciprocal_examples(train: Tensor, num_relations: int) -> Tensor:
    """(h, r, t) and (t, r + R, h): every query becomes a tail query (kbc ``datasets.py``)."""
    inverse = torch.stack([train[:, 2], train[:, 1] + num_relations, train[:, 0]], 1)
    return torch.cat([train, inverse])


def n3_factors(kind: str, *rows: Tensor) -> list[Tensor]:
    """kbc's N3 factors: |x| per real coordinate (DistMult), the modulus per complex coordinate (ComplEx)."""
    if kind == "complex":
        return [torch.sqrt(re ** 2 + im ** 2) for re, im in (x.chunk(2, dim=-1) for x in rows)]
    return [x.abs() for x in rows]


def steps_per_epoch(num_train: int, batch_size: int) -> int:
    return math.ceil(2 * num_train / batch_size)


class CheckpointError(DataError):
    """A training checkpoint that cannot be trusted (truncated, corrupted, another run's) or is in use: one line, exit 2."""


MAGIC = b"REP-TRAIN-STATE v1\n"  # then the payload's sha256 (64 hex + newline), then torch.save's bytes
DIGEST_LEN = 65


def rng_states() -> dict[str, Any]:
    """torch / numpy / python global RNG states, as plain types (loadable with ``weights_only=True``)."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    version, internal, gauss_next = random.getstate()
    return {"torch": torch.get_rng_state(), "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), int(pos),
                                                        int(has_gauss), float(gauss)],
            "python": [version, list(internal), gauss_next]}


def set_rng_states(saved: dict[str, Any]) -> None:
    torch.set_rng_state(saved["torch"])
    kind, keys, pos, has_gauss, gauss = saved["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, gauss))
    version, internal, gauss_next = saved["python"]
    random.setstate((version, tuple(internal), gauss_next))


@dataclass
class StateFile:
    """Where one run's training state is checkpointed (``<cache>/rep_embeddings/<key>.state``), and how often.

    One file, written atomically (shared.atomic: a reader sees the previous checkpoint or the new one), that
    carries its own sha256: a truncated or altered file is refused (CheckpointError, one line naming the file
    and the fix), never half-loaded and never silently replaced by a restart from step 0. A run holds an
    exclusive flock on ``<key>.state.lock`` while it trains, so two processes never train the same run.
    """

    path: Path
    key: str
    every_seconds: float
    last: float = field(default=0.0, init=False)
    _lock: Any = field(default=None, init=False, repr=False)

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = open(self.path.with_name(self.path.name + ".lock"), "a")  # noqa: SIM115 (held while training)
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            self._lock = None
            raise CheckpointError(f"another process is training this exact run (it holds {self._lock_path()}); "
                                  f"wait for it, then run again to load its embeddings") from None
        self.last = self.now()

    def now(self) -> float:
        return time.monotonic()  # the checkpoint clock (tests replace it)

    def _lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")

    def release(self) -> None:
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def due(self) -> bool:
        return self.now() - self.last >= self.every_seconds

    def save(self, state: dict[str, Any]) -> None:
        buffer = io.BytesIO()
        torch.save(state | {"key": self.key}, buffer)
        payload = buffer.getvalue()
        with atomic_path(self.path) as tmp, open(tmp, "wb") as f:
            f.write(MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
            f.flush()
            os.fsync(f.fileno())
        self.last = self.now()

    def load(self) -> dict[str, Any] | None:
        """The last checkpoint of this run, or None when there is none; CheckpointError when it cannot be trusted."""
        if not self.path.exists():
            return None
        blob = self.path.read_bytes()
        head = len(MAGIC) + DIGEST_LEN
        fix = "delete it to train this run from step 0"
        if not blob.startswith(MAGIC) or len(blob) <= head:
            raise CheckpointError(f"training checkpoint {self.path} is truncated or not a checkpoint "
                                  f"({len(blob)} bytes): {fix}")
        if hashlib.sha256(blob[head:]).hexdigest().encode() != blob[len(MAGIC):head - 1]:
            raise CheckpointError(f"training checkpoint {self.path} is corrupted or truncated (its sha256 does not "
                                  f"match the one it was written with): {fix}")
        state = torch.load(io.BytesIO(blob[head:]), map_location="cpu", weights_only=True)
        if state.get("key") != self.key:
            raise CheckpointError(f"training checkpoint {self.path} belongs to another run (key {state.get('key')}, "
                                  f"expected {self.key}): {fix}")
        return state

    def discard(self) -> None:
        self.path.unlink(missing_ok=True)


@dataclass
class EarlyStopping:
    """Validation MRR every ``eval_every`` epochs: keep the best embeddings, stop after ``patience`` evaluations
    in a row without a new best (any increase counts; ``patience`` None: never stop, still select the best)."""

    patience: int | None
    best: float = -math.inf
    best_step: int = 0
    bad: int = 0
    curve: list[dict[str, float]] = field(default_factory=list)
    best_entity: Tensor | None = None
    best_relation: Tensor | None = None

    def update(self, model: KGE, step: int, epoch: float, mrr: float) -> None:
        self.curve.append({"step": step, "epoch": epoch, "val_mrr": mrr})
        if mrr > self.best:
            self.best, self.best_step, self.bad = mrr, step, 0
            self.best_entity = model.entity.detach().clone()
            self.best_relation = model.relation.detach().clone()
        else:
            self.bad += 1

    @property
    def stop(self) -> bool:
        return self.patience is not None and self.bad >= self.patience

    def state(self) -> dict[str, Any]:
        return {"patience": self.patience, "best": self.best, "best_step": self.best_step, "bad": self.bad,
                "curve": self.curve, "best_entity": self.best_entity, "best_relation": self.best_relation}

    @classmethod
    def restored(cls, state: dict[str, Any]) -> EarlyStopping:
        return cls(**state)


def fit_one_vs_all(model: KGE, train: Tensor, hp: Any, steps: int, seed: int, log: LogFn, log_every: int = 200,
                   checkpoint: Callable[[int, float], bool] | None = None, checkpoint_every: int = 0,
                   validate: Callable[[], float] | None = None, state_file: StateFile | None = None) -> dict[str, Any]:
    """1-vs-all cross-entropy with reciprocal relations and N3 (module docstring); at most ``steps`` optimiser steps.

    ``checkpoint(step, train_seconds)`` runs every ``checkpoint_every`` steps outside the timed training
    (budget curves evaluate there); returning True stops training early.

    ``validate()`` (the validation MRR of the current embeddings) runs every ``hp.eval_every`` epochs and after
    the last step: early stopping (EarlyStopping, ``hp.patience``); when training ends the best-validation
    embeddings are copied back into ``model``. ``state_file``: the whole training state (parameters, Adagrad
    sums, the shuffling generator, the pass's permutation and cursor, torch / numpy / python RNG states, the
    early-stopping state) is saved every ``state_file.every_seconds`` and training resumes from it; a resumed run
    ends bit-identical to an uninterrupted one (same hardware and thread count: tested in tests/test_rep_resume.py).
    Times in the summary add up the sessions (work lost after the last checkpoint is not counted).
    """
    if model.kind not in ("distmult", "complex") or not model.reciprocal:
        raise ValueError(f"the one_vs_all recipe needs a reciprocal DistMult/ComplEx, got {model.kind} "
                         f"(reciprocal={model.reciprocal}); use recipe negative_sampling for distance models")
    device = model.entity.device
    gen = torch.Generator().manual_seed(seed)
    examples = reciprocal_examples(train, model.num_relations).to(device)
    opt = torch.optim.Adagrad([model.entity, model.relation], lr=hp.lr)
    batch, n = int(hp.batch_size), len(examples)
    per_epoch = steps_per_epoch(len(train), batch)
    eval_steps = max(1, round(float(hp.get("eval_every") or 1.0) * per_epoch))
    early = EarlyStopping(hp.get("patience"))
    step, timed, val_seconds, perm, cursor, sessions, resumed_at = 0, 0.0, 0.0, None, n, 1, None
    losses: deque[float] = deque(maxlen=max(log_every, 50))
    if state_file is not None:
        state_file.acquire()
    try:
        saved = state_file.load() if state_file is not None else None
        if saved is not None:
            with torch.no_grad():
                model.entity.copy_(saved["entity"])
                model.relation.copy_(saved["relation"])
            opt.load_state_dict(saved["optimizer"])
            gen.set_state(saved["generator"])
            set_rng_states(saved["rng"])
            step, timed, val_seconds, cursor = saved["step"], saved["train_seconds"], saved["val_seconds"], saved["cursor"]
            perm = None if saved["perm"] is None else saved["perm"].to(device)
            losses.extend(saved["losses"])
            early = EarlyStopping.restored(saved["early"])
            sessions, resumed_at = saved["sessions"] + 1, step
            if saved["torch_threads"] != torch.get_num_threads():
                progress.write(f"warning: resuming with {torch.get_num_threads()} torch threads, the checkpoint ran "
                               f"{saved['torch_threads']}: the result may differ in the last bits from an "
                               f"uninterrupted run")
            progress.write(f"resumed from {state_file.path} at step {step} ({step / per_epoch:.2f} epochs)")

        def snapshot() -> dict[str, Any]:
            return {"step": step, "entity": model.entity.detach().cpu(), "relation": model.relation.detach().cpu(),
                    "optimizer": opt.state_dict(), "generator": gen.get_state(), "rng": rng_states(),
                    "perm": None if perm is None else perm.cpu(), "cursor": cursor, "losses": list(losses),
                    "train_seconds": timed, "val_seconds": val_seconds, "early": early.state(),
                    "sessions": sessions, "torch_threads": torch.get_num_threads()}

        stopped = "max_steps"
        bar = progress.bar(desc="train", total=steps, initial=step, unit="step")
        while step < steps:
            started = time.perf_counter()
            if cursor >= n:  # a fresh shuffled pass; the last batch of a pass may be partial (kbc)
                perm, cursor = torch.randperm(n, generator=gen).to(device), 0
            x = examples[perm[cursor:cursor + batch]]
            cursor += batch
            lhs, rel, rhs = model.entity[x[:, 0]], model.relation[x[:, 1]], model.entity[x[:, 2]]
            q = context(model.kind, lhs, rel, 1, model.embedding_range)
            loss = F.cross_entropy(q @ model.entity.T, x[:, 2])
            if hp.n3:
                loss = loss + hp.n3 * sum(f.pow(3).sum() for f in n3_factors(model.kind, lhs, rel, rhs)) / len(x)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(loss.item())
            step += 1
            timed += time.perf_counter() - started
            bar.update(1)  # outside the timed step
            if not math.isfinite(losses[-1]):
                raise FloatingPointError(f"loss became {losses[-1]} at step {step}; lower model.lr")
            if step % log_every == 0:
                log({"train_loss": sum(list(losses)[-log_every:]) / log_every}, step)
            if validate is not None and (step % eval_steps == 0 or step == steps):
                started = time.perf_counter()
                mrr = float(validate())
                val_seconds += time.perf_counter() - started
                early.update(model, step, round(step / per_epoch, 3), mrr)
                log({"val_mrr": mrr}, step)
                progress.write(f"epoch {step / per_epoch:.2f}  val MRR {mrr:.4f}  (best {early.best:.4f} at epoch "
                               f"{early.best_step / per_epoch:.2f}; {early.bad} without a new best)  "
                               f"train {timed / 60:.1f} min + validation {val_seconds / 60:.1f} min")
                if early.stop:
                    stopped = "patience"
                    break
            if checkpoint is not None and checkpoint_every and step % checkpoint_every == 0 and checkpoint(step, timed):
                stopped = "checkpoint callback"
                break
            if state_file is not None and state_file.due():
                state_file.save(snapshot())
        bar.close()
    finally:
        if state_file is not None:
            state_file.release()
    summary: dict[str, Any] = {"steps": step, "epochs": round(step / per_epoch, 3),
                               "final_loss": sum(list(losses)[-50:]) / max(1, len(list(losses)[-50:])),
                               "stopped": stopped}
    if validate is not None and early.best_entity is not None:
        with torch.no_grad():  # the selected embeddings are the best-validation ones
            model.entity.copy_(early.best_entity)
            model.relation.copy_(early.best_relation)
        summary |= {"best_step": early.best_step, "best_epoch": round(early.best_step / per_epoch, 3),
                    "best_val_mrr": early.best, "eval_every": eval_steps / per_epoch, "patience": early.patience,
                    "validation": early.curve}
    summary |= {"train_seconds": round(timed + val_seconds, 2), "step_seconds": round(timed, 2),
                "validation_seconds": round(val_seconds, 2), "sessions": sessions, "resumed_at_step": resumed_at}
    return summary


def fit_recipe(model: KGE, train: Tensor, hp: Any, steps: int, seed: int, log: LogFn,
               validate: Callable[[], float] | None = None, state_file: StateFile | None = None) -> dict[str, Any]:
    recipe = hp.get("recipe", "negative_sampling")
    if recipe == "one_vs_all":
        return fit_one_vs_all(model, train, hp, steps, seed, log, validate=validate, state_file=state_file)
    if recipe == "negative_sampling":
        started = time.perf_counter()
        summary = fit(model, train, hp, steps, seed, log)
        return summary | {"train_seconds": round(time.perf_counter() - started, 2)}
    raise ValueError(f"unknown recipe '{recipe}'; valid: one_vs_all, negative_sampling")


def cache_key(dataset: str, kind: str, hp: dict[str, Any], steps: int, seed: int) -> str:
    # Negative-sampling embeddings depend on the subsampling weight's offset: a key of their own since it changed
    # (embeddings cached at 4.0 are never reused); the 1-vs-all recipe has no weight and keeps its keys.
    weighting = {} if hp.get("recipe") == "one_vs_all" else {"subsampling_offset": SUBSAMPLING_OFFSET}
    blob = json.dumps({"dataset": dataset, "kind": kind, "hp": hp, "steps": steps, "seed": seed,
                       "torch": torch.__version__, **weighting}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def train_or_load(model: KGE, dataset: str, train: Tensor, hp: Any, hp_dict: dict[str, Any], steps: int, seed: int,
                  log: LogFn, use_cache: bool, validate: Callable[[], float] | None = None) -> dict[str, Any]:
    """Train, or reload the embeddings this exact (data, model, hyperparameters, steps, seed) produced.

    The cache lets a REP sweep over alpha/khop reuse one trained base model per seed. With the cache on, the
    1-vs-all recipe checkpoints its whole training state every ``hp.checkpoint_minutes`` under the same key
    (``<key>.state`` beside the embeddings; removed once they are saved): the same command resumes from it.
    ``hp_dict`` (the key) holds every hyperparameter that shapes the embeddings, so never checkpoint_minutes.
    """
    key = cache_key(dataset, model.kind, hp_dict, steps, seed)
    folder = cache_dir() / "rep_embeddings"
    path = folder / f"{key}.pt"
    if use_cache and intact(path):  # size + sha256 as saved: a truncated file is retrained, not loaded
        saved = torch.load(path, map_location=model.entity.device)
        with torch.no_grad():
            model.entity.copy_(saved["entity"])
            model.relation.copy_(saved["relation"])
        return saved["summary"] | {"from_cache": True}
    state_file = None
    if use_cache and hp.get("recipe") == "one_vs_all" and hp.get("checkpoint_minutes") is not None:
        state_file = StateFile(folder / f"{key}.state", key, 60.0 * float(hp.checkpoint_minutes))
    summary = fit_recipe(model, train, hp, steps, seed, log, validate, state_file)
    if use_cache:
        with atomic_path(path) as tmp:
            torch.save({"entity": model.entity.detach().cpu(), "relation": model.relation.detach().cpu(),
                        "summary": summary}, tmp)
        stamp(path)
        if state_file is not None:
            state_file.discard()  # the embeddings are saved: nothing left to resume
    return summary | {"from_cache": False}
