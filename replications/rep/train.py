"""Base-model training, two recipes (``recipe`` in the model config):

``one_vs_all`` (DistMult / ComplEx; Lacroix et al. 2018, facebookresearch/kbc ``learn.py``): every training
triple (h, r, t) also gives the reciprocal query (t, r + R, ?); each query is scored against all entities
with a softmax cross-entropy on the true answer, plus the weighted N3 penalty
``n3 * sum(|lhs|^3 + |rel|^3 + |rhs|^3) / batch`` on the batch's factors (ComplEx: moduli of the complex
coordinates), Adagrad, N(0, 1) * init_scale initialisation, one shuffled pass per epoch (last batch partial).

``negative_sampling`` (below): the RotatE repo recipe.

Loss (RotatE repo ``model.py: train_step``), per positive (h, r, t) and K negatives:
    -(w * log sigmoid(s_pos) + w * sum_k softmax(adv * s_neg)_k log sigmoid(-s_neg_k)) / 2
with w the subsampling weight 1 / sqrt(4 + #(h, r) + #(t, r^-1)), corrupting heads and tails in
alternate batches, Adam, learning rate divided by 10 at half the steps, and the repo's L3
regulariser for DistMult/ComplEx. Changes for the CPU: the K negatives of a batch are shared by all
its positives (DGL-KE / Graph4KG "chunk" sampling), so the negative scores are one matrix product;
entity rows get sparse gradients and ``SparseAdam`` (lazy Adam: untouched rows keep their moments),
and the L3 term covers the rows a batch uses rather than the whole table, so a step costs O(batch),
not O(#entities) (dense Adam on WN18RR's 41k entities was ~7x slower per step, measured here).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from replications.rep.models import KGE, context
from shared import progress
from shared.atomic import atomic_path
from shared.data import cache_dir
from shared.data.derived import intact, stamp
from shared.replication import LogFn


def subsampling_weights(train: Tensor) -> Tensor:
    h, r, t = train[:, 0], train[:, 1], train[:, 2]
    n_rel = int(r.max()) + 1
    counts = []
    for key in (h * 2 * n_rel + r, t * 2 * n_rel + n_rel + r):  # (h, r) and (t, r^-1)
        _, inverse, count = torch.unique(key, return_inverse=True, return_counts=True)
        counts.append(count[inverse])
    return (4.0 + counts[0] + counts[1]).float().rsqrt()  # RotatE repo: count starts at 4


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


def fit_one_vs_all(model: KGE, train: Tensor, hp: Any, steps: int, seed: int, log: LogFn, log_every: int = 200,
                   checkpoint: Callable[[int, float], bool] | None = None, checkpoint_every: int = 0) -> dict[str, Any]:
    """1-vs-all cross-entropy with reciprocal relations and N3 (module docstring); ``steps`` optimiser steps.

    ``checkpoint(step, train_seconds)`` runs every ``checkpoint_every`` steps outside the timed training
    (budget curves evaluate there); returning True stops training early.
    """
    if model.kind not in ("distmult", "complex") or not model.reciprocal:
        raise ValueError(f"the one_vs_all recipe needs a reciprocal DistMult/ComplEx, got {model.kind} "
                         f"(reciprocal={model.reciprocal}); use recipe negative_sampling for distance models")
    device = model.entity.device
    gen = torch.Generator().manual_seed(seed)
    examples = reciprocal_examples(train, model.num_relations).to(device)
    opt = torch.optim.Adagrad([model.entity, model.relation], lr=hp.lr)
    batch, n = int(hp.batch_size), len(examples)
    step, losses, timed, perm, cursor = 0, [], 0.0, None, n
    bar = progress.bar(desc="train", total=steps, unit="step")
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
            log({"train_loss": sum(losses[-log_every:]) / log_every}, step)
        if checkpoint is not None and checkpoint_every and step % checkpoint_every == 0 and checkpoint(step, timed):
            break
    bar.close()
    return {"steps": step, "epochs": round(step / steps_per_epoch(len(train), batch), 3),
            "final_loss": sum(losses[-50:]) / max(1, len(losses[-50:]))}


def fit_recipe(model: KGE, train: Tensor, hp: Any, steps: int, seed: int, log: LogFn) -> dict[str, Any]:
    recipe = hp.get("recipe", "negative_sampling")
    if recipe == "one_vs_all":
        return fit_one_vs_all(model, train, hp, steps, seed, log)
    if recipe == "negative_sampling":
        return fit(model, train, hp, steps, seed, log)
    raise ValueError(f"unknown recipe '{recipe}'; valid: one_vs_all, negative_sampling")


def cache_key(dataset: str, kind: str, hp: dict[str, Any], steps: int, seed: int) -> str:
    blob = json.dumps({"dataset": dataset, "kind": kind, "hp": hp, "steps": steps, "seed": seed,
                       "torch": torch.__version__}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def train_or_load(model: KGE, dataset: str, train: Tensor, hp: Any, hp_dict: dict[str, Any], steps: int, seed: int,
                  log: LogFn, use_cache: bool) -> dict[str, Any]:
    """Train, or reload the embeddings this exact (data, model, hyperparameters, steps, seed) produced.

    The cache lets a REP sweep over alpha/khop reuse one trained base model per seed.
    """
    path = cache_dir() / "rep_embeddings" / f"{cache_key(dataset, model.kind, hp_dict, steps, seed)}.pt"
    if use_cache and intact(path):  # size + sha256 as saved: a truncated file is retrained, not loaded
        saved = torch.load(path, map_location=model.entity.device)
        with torch.no_grad():
            model.entity.copy_(saved["entity"])
            model.relation.copy_(saved["relation"])
        return saved["summary"] | {"from_cache": True}
    started = time.perf_counter()
    summary = fit_recipe(model, train, hp, steps, seed, log)
    summary["train_seconds"] = round(time.perf_counter() - started, 2)
    if use_cache:
        with atomic_path(path) as tmp:
            torch.save({"entity": model.entity.detach().cpu(), "relation": model.relation.detach().cpu(),
                        "summary": summary}, tmp)
        stamp(path)
    return summary | {"from_cache": False}
