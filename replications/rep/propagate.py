"""REP (Wang et al., IJCAI 2022): relation-based embedding propagation, as official ``rep.py`` defines it.

Per hop, for every entity e with at least one training triple:
    a_e = aggregate over its neighbours u of f(u, r, dir)    (dir +1: (u, r, e); dir -1: (e, r, u))
    e  <- alpha * e + (1 - alpha) * a_e
all entities from the previous hop's table at once (``rep.py`` writes a fresh array per hop).
Isolated entities and relation embeddings are never changed. Aggregation is the mean (default) or,
with ``degree_weighted``, a sum with weights indeg(u)^degree_w normalised over e's neighbours, where
indeg(u) = 1 + #training triples with u as tail (``rep.py: get_indegree``). (``rep.py``'s RotatE branch
with ``neighbor_norm`` uses an undefined variable; here the weights apply to the rotated contexts, as
in its TransE and DistMult branches. The official configs use ``neighbor_norm`` only for WN18RR TransE.)

Vectorised: f is affine in u for a fixed (r, dir) (``KGE.context_parts``), so the weighted sum over
the neighbours sharing one (e, r, dir) "group" is f applied to the weighted sum of their embeddings.
One hop = sparse (groups x entities) product, f on the groups, sparse (entities x groups) product,
instead of ``rep.py``'s per-entity Python loops.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch
from torch import Tensor

from replications.rep.models import KGE


@dataclass
class Incidence:
    gather: Tensor  # sparse CSR (groups x entities): weighted neighbour sums per (e, r, dir)
    scatter: Tensor  # sparse CSR (entities x groups): 1 where the group belongs to entity e
    relation: Tensor  # (groups,) relation id
    direction: Tensor  # (groups,) +1 or -1
    weight_sum: Tensor  # (groups, 1) total weight of the group (for TransE's additive r)
    has_neighbours: Tensor  # (entities,) bool


def incidence(train: Tensor, num_entities: int, num_relations: int, degree_weighted: bool = False,
              degree_w: float = 0.1) -> Incidence:
    """Message j < n: the tail's context from its head (dir +1); n + j: the head's from its tail (dir -1)."""
    h, r, t = train[:, 0], train[:, 1], train[:, 2]
    n = len(train)
    dst, src, rel = torch.cat([t, h]), torch.cat([h, t]), torch.cat([r, r])
    direction = torch.cat([torch.ones(n, dtype=torch.long), -torch.ones(n, dtype=torch.long)])
    if degree_weighted:
        indeg = 1.0 + torch.bincount(t, minlength=num_entities).double()
        w = indeg[src] ** degree_w
    else:
        w = torch.ones(2 * n, dtype=torch.float64)
    norm = torch.zeros(num_entities, dtype=torch.float64).index_add_(0, dst, w)
    w = w / norm[dst]  # mean (or normalised degree weights) over each entity's neighbours
    # direction in the highest digit: unique() sorts all dir -1 groups before all dir +1 groups
    key = (direction > 0).long() * (num_entities * num_relations) + dst * num_relations + rel
    groups, group_of = torch.unique(key, return_inverse=True)
    g = len(groups)
    group_dir = torch.where(groups >= num_entities * num_relations, 1, -1)
    groups = groups % (num_entities * num_relations)
    gather = torch.sparse_coo_tensor(torch.stack([group_of, src]), w.float(), (g, num_entities),
                                     check_invariants=False).coalesce()
    group_dst = torch.div(groups, num_relations, rounding_mode="floor")
    scatter = torch.sparse_coo_tensor(torch.stack([group_dst, torch.arange(g)]), torch.ones(g), (num_entities, g),
                                      check_invariants=False)
    weight_sum = torch.zeros(g, dtype=torch.float64).index_add_(0, group_of, w).float()[:, None]
    with warnings.catch_warnings():  # "sparse CSR support is in beta": the product is tested against rep.py's loop
        warnings.simplefilter("ignore", UserWarning)
        gather, scatter = gather.to_sparse_csr(), scatter.coalesce().to_sparse_csr()
    return Incidence(gather, scatter,
                     groups % num_relations, group_dir, weight_sum, norm > 0)


def hop(model: KGE, ent: Tensor, ops: Tensor, inc: Incidence, alpha: float) -> Tensor:
    sums = torch.sparse.mm(inc.gather, ent)
    split = int((inc.direction < 0).sum())  # groups are sorted: dir -1 first
    parts = []
    for d, rows in ((-1, slice(0, split)), (1, slice(split, None))):
        r, d_used = model.resolve(inc.relation[rows], d)  # reciprocal models: head side via r + R
        linear, offset = model.context_parts(sums[rows], ops[r], d_used)
        parts.append(linear if offset is None else linear + inc.weight_sum[rows] * offset)
    contexts = torch.cat(parts)
    aggregated = torch.sparse.mm(inc.scatter, contexts)
    return torch.where(inc.has_neighbours[:, None], alpha * ent + (1.0 - alpha) * aggregated, ent)


@torch.no_grad()
def rep(model: KGE, train: Tensor, alpha: float, khop: int, degree_weighted: bool = False,
        degree_w: float = 0.1, entity: Tensor | None = None) -> Tensor:
    """Entity table after ``khop`` REP hops (relations untouched); alpha = 1 or khop = 0: identity."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"REP alpha must be in [0, 1], got {alpha}")
    if khop < 0:
        raise ValueError(f"REP khop must be >= 0, got {khop}")
    ent = (model.entity if entity is None else entity).detach().clone()
    if khop == 0 or alpha == 1.0:
        return ent
    rel = model.relation.detach()
    inc = incidence(train.cpu(), ent.shape[0], model.num_relations, degree_weighted, degree_w)
    if ent.device.type != "cpu":
        inc = Incidence(*(x.to(ent.device) for x in vars(inc).values()))
    ops = model.operators(rel)
    for _ in range(khop):
        ent = hop(model, ent, ops, inc, alpha)
    return ent


@torch.no_grad()
def rep_reference(model: KGE, train: Tensor, alpha: float, khop: int, degree_weighted: bool = False,
                  degree_w: float = 0.1) -> Tensor:
    """``rep.py``'s per-entity loop, kept only to test the vectorised version against it."""
    ent = model.entity.detach().clone()
    rel = model.relation.detach()
    indeg = 1.0 + torch.bincount(train[:, 2], minlength=ent.shape[0]).double()
    for _ in range(khop):
        new = ent.clone()
        for e in range(ent.shape[0]):
            as_head, as_tail = train[train[:, 0] == e], train[train[:, 2] == e]
            if len(as_head) + len(as_tail) == 0:
                continue
            ctx = torch.cat([model.context(ent, rel, as_tail[:, 0], as_tail[:, 1], 1),
                             model.context(ent, rel, as_head[:, 2], as_head[:, 1], -1)])
            if degree_weighted:
                w = indeg[torch.cat([as_tail[:, 0], as_head[:, 2]])] ** degree_w
                agg = ((w / w.sum()).float()[:, None] * ctx).sum(0)
            else:
                agg = ctx.mean(0)
            new[e] = alpha * ent[e] + (1 - alpha) * agg
        ent = new
    return ent
