"""TransE, DistMult, ComplEx and RotatE, written around one "context" function per model.

Every score is ``match(q, e)`` between a query ``q = context(u, r, direction)`` built from one known
entity ``u`` of a triple and a candidate ``e`` for the other end:

* direction +1 (u is the head, predict the tail), direction -1 (u is the tail, predict the head);
* TransE / RotatE: ``match = gamma - ||q - e||_2``; DistMult / ComplEx: ``match = <q, e>``.

This context is exactly REP's relational context function (official ``rep.py``): TransE ``h + r`` /
``t - r``, DistMult ``r * u`` both ways, RotatE ``u o e^{+i phase}`` / ``u o e^{-i phase}``. ComplEx,
absent from ``rep.py``, follows from its score the same way: Re<h, r, conj t> = <h o r, t> = <conj(r) o t, h>
(real dot product of [re, im] halves), so the context is ``h o r`` for a tail and ``t o conj(r)`` for a
head, i.e. RotatE's rule without the unit modulus, just as DistMult is ComplEx with real vectors.

Distances: ``distance="l2"`` (the small CPU protocol) is L2 over the whole (complex) vector, as in
torch_geometric's ``RotatE``: ranking against all entities is then one matrix product, which on 2 CPU
cores is ~10x faster than ``cdist(p=1)`` and ~100x faster than summed moduli (measured here).
``distance="l1"`` is the RotatE repo's own (``model.py``): TransE ``||h + r - t||_1`` (l1score.py: a fused C
kernel, ~30x ``cdist(p=1)``), RotatE the sum over
complex coordinates of ``|h o r - t|``; the published-strength recipes use it, so that the official
gamma (9 / 6) means what it meant there. torch_geometric's classes themselves are not used: its TransE re-normalises entities
inside the score and its ``test`` ranks one triple at a time.

``reciprocal=True`` (the 1-vs-all recipe, Lacroix et al. 2018): the relation table holds an inverse
relation ``r + R`` per relation, and a head query is the tail query of the inverse,
``f(t, r, -1) = f(t, r + R, +1)`` (``resolve``); REP and the evaluator go through the same rule.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from replications.rep.l1score import l1_distances

MODELS = ("transe", "distmult", "complex", "rotate")
DISTANCE_MODELS = ("transe", "rotate")
DISTANCES = ("l2", "l1")
CHUNK_ELEMENTS = 1 << 25  # broadcast (queries x candidates x dim) block for L1 scores: 128 MiB of float32


class KGE(nn.Module):
    def __init__(self, kind: str, num_entities: int, num_relations: int, dim: int, gamma: float,
                 epsilon: float = 2.0, reciprocal: bool = False, init_scale: float | None = None,
                 distance: str = "l2") -> None:
        super().__init__()
        if kind not in MODELS:
            raise ValueError(f"unknown KGE model '{kind}'; valid: {', '.join(MODELS)}")
        if dim % 2 and kind in ("complex", "rotate"):
            raise ValueError(f"{kind} needs an even dim (real and imaginary halves), got {dim}")
        if distance not in DISTANCES:
            raise ValueError(f"unknown distance '{distance}'; valid: {', '.join(DISTANCES)}")
        self.kind, self.dim, self.gamma, self.distance = kind, dim, float(gamma), distance
        self.num_relations, self.reciprocal = num_relations, reciprocal
        # RotatE repo (model.py): uniform(-range, range), range = (gamma + epsilon) / hidden_dim.
        hidden = dim // 2 if kind in ("complex", "rotate") else dim
        self.embedding_range = (self.gamma + epsilon) / hidden
        rel_dim = hidden if kind == "rotate" else dim  # RotatE: one phase per complex dimension
        rel_rows = 2 * num_relations if reciprocal else num_relations
        if init_scale is None:
            self.entity = nn.Parameter(torch.empty(num_entities, dim).uniform_(-self.embedding_range,
                                                                               self.embedding_range))
            self.relation = nn.Parameter(torch.empty(rel_rows, rel_dim).uniform_(-self.embedding_range,
                                                                                 self.embedding_range))
        else:  # kbc (Lacroix et al. 2018): N(0, 1) * init_scale
            self.entity = nn.Parameter(torch.randn(num_entities, dim) * init_scale)
            self.relation = nn.Parameter(torch.randn(rel_rows, rel_dim) * init_scale)

    def resolve(self, r: Tensor, direction: int) -> tuple[Tensor, int]:
        """(relation rows, direction) a query really uses: reciprocal models predict heads with r + R."""
        if self.reciprocal and direction == -1:
            return r + self.num_relations, 1
        return r, direction

    def context(self, ent: Tensor, rel: Tensor, anchor: Tensor, r: Tensor, direction: int) -> Tensor:
        """REP's context f(u, r, dir) = the query for the other end of (u, r); ent/rel may be REP'd tables."""
        r, direction = self.resolve(r, direction)
        return context(self.kind, ent[anchor], rel[r], direction, self.embedding_range)

    def operators(self, rel: Tensor) -> Tensor:
        """Per-relation operator table (RotatE: cos/sin of the phases), computed once for REP."""
        return relation_operator(self.kind, rel, self.embedding_range)

    def context_parts(self, u: Tensor, op: Tensor, direction: int) -> tuple[Tensor, Tensor | None]:
        """f(u, r, dir) = linear(u) + offset with linear in u (op: rows of ``operators``).

        Lets REP apply f to the summed neighbours of one (entity, relation, direction) group.
        """
        if self.kind == "transe":
            return u, direction * op
        return apply_context(self.kind, u, op, direction), None

    def match(self, q: Tensor, cand: Tensor) -> Tensor:
        """Scores of queries (B, d) against candidates (C, d) -> (B, C)."""
        if self.kind in DISTANCE_MODELS:
            if self.distance == "l1":
                return self.gamma - self.l1_distances(q, cand)
            sq = (q * q).sum(1, keepdim=True) + (cand * cand).sum(1) - 2.0 * q @ cand.T
            return self.gamma - sq.clamp_min(1e-12).sqrt()
        return q @ cand.T

    def l1_distances(self, q: Tensor, cand: Tensor) -> Tensor:
        """(B, C) official distances: L1 (TransE, the fused kernel of l1score) or the sum of complex moduli (RotatE,
        in blocks)."""
        if self.kind == "transe":
            return l1_distances(q, cand)
        budget = CHUNK_ELEMENTS * (32 if cand.is_cuda else 1)  # 4 GiB blocks on a GPU: fewer, larger kernels
        rows = max(1, budget // max(1, cand.shape[0] * cand.shape[1]))
        return torch.cat([modulus_sum(q[i:i + rows, None, :] - cand[None]) for i in range(0, len(q), rows)])

    def rank_scores(self, q: Tensor, cand: Tensor) -> Tensor:
        """A strictly increasing function of ``match`` per query row, for ranking: one fused matmul.

        For distances, -||q - e||^2 + ||q||^2 = 2 q.e - ||e||^2 (skips the sqrt and the row constant).
        """
        if self.kind in DISTANCE_MODELS:
            if self.distance == "l1":
                return -self.l1_distances(q, cand)
            return torch.addmm((cand * cand).sum(1)[None, :], q, cand.T, beta=-1.0, alpha=2.0)
        return q @ cand.T

    def match_pairs(self, q: Tensor, cand: Tensor) -> Tensor:
        """Row-wise scores of queries (B, d) against their own candidate (B, d) -> (B,)."""
        if self.kind in DISTANCE_MODELS:
            if self.distance == "l1":
                diff = q - cand
                return self.gamma - (diff.abs().sum(1) if self.kind == "transe" else modulus_sum(diff))
            return self.gamma - ((q - cand) ** 2).sum(1).clamp_min(1e-12).sqrt()
        return (q * cand).sum(1)


def modulus_sum(diff: Tensor) -> Tensor:
    """Sum over complex coordinates of |re + i im| ([re, im] halves on the last axis), as RotatE's model.py."""
    re, im = diff.chunk(2, dim=-1)
    return torch.sqrt(re * re + im * im + 1e-18).sum(-1)  # the epsilon keeps the gradient finite at 0


def relation_operator(kind: str, rel: Tensor, embedding_range: float) -> Tensor:
    """What multiplies/adds into u: r itself, or RotatE's unit complex number [cos, sin] of its phase."""
    if kind == "rotate":
        phase = rel / (embedding_range / math.pi)  # RotatE repo; REP must use the training constant
        return torch.cat([torch.cos(phase), torch.sin(phase)], dim=-1)
    return rel


def apply_context(kind: str, u: Tensor, op: Tensor, direction: int) -> Tensor:
    if direction not in (1, -1):
        raise ValueError(f"direction must be +1 (tail query) or -1 (head query), got {direction}")
    if kind == "transe":
        return u + direction * op
    if kind == "distmult":
        return u * op
    re_u, im_u = u.chunk(2, dim=-1)
    re_r, im_r = op.chunk(2, dim=-1)  # complex / rotate: [re, im]
    im_r = im_r * direction  # direction -1: multiply by conj(r)
    return torch.cat([re_u * re_r - im_u * im_r, re_u * im_r + im_u * re_r], dim=-1)


def context(kind: str, u: Tensor, rel: Tensor, direction: int, embedding_range: float) -> Tensor:
    return apply_context(kind, u, relation_operator(kind, rel, embedding_range), direction)
