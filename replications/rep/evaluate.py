"""Vectorised filtered ranking (head and tail prediction): MRR, MR, Hits@1/3/10.

Ties follow OGB's link-prediction evaluator: rank = 1 + #(better) + 0.5 * #(equal), the mean of the
optimistic and pessimistic rank; Hits@k counts rank <= k. "Filtered" (Bordes et al. 2013): every
other entity that forms a true triple in train/valid/test is removed from the candidates.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from shared import progress

HITS = (1, 3, 10)
ScoreFn = Callable[[Tensor, Tensor, int], Tensor]  # (anchor ids, relation ids, direction) -> (B, N)


def filter_pairs(queries: Tensor, known: Tensor, direction: int) -> tuple[Tensor, Tensor]:
    """For each query triple, the answers known for its (anchor, relation): CSR (row_ptr, entities).

    direction +1: anchor = head, answers = tails; -1: anchor = tail, answers = heads.
    """
    a_col, b_col = (0, 2) if direction == 1 else (2, 0)
    n_rel = int(max(known[:, 1].max(), queries[:, 1].max())) + 1
    keys = known[:, a_col] * n_rel + known[:, 1]
    order = torch.argsort(keys, stable=True)
    keys, answers = keys[order], known[order, b_col]
    qkeys = queries[:, a_col] * n_rel + queries[:, 1]
    lo = torch.searchsorted(keys, qkeys, right=False)
    hi = torch.searchsorted(keys, qkeys, right=True)
    counts = hi - lo
    row_ptr = torch.zeros(len(queries) + 1, dtype=torch.long)
    row_ptr[1:] = torch.cumsum(counts, 0)
    offsets = torch.arange(int(row_ptr[-1])) - row_ptr[:-1].repeat_interleave(counts)
    return row_ptr, answers[lo.repeat_interleave(counts) + offsets]


def ranks(score_fn: ScoreFn, queries: Tensor, known: Tensor, direction: int, batch_size: int = 512) -> Tensor:
    """Filtered rank of the true answer of every query triple, in one direction."""
    if len(queries) == 0:
        raise ValueError("no query triples to rank (empty split)")
    a_col, b_col = (0, 2) if direction == 1 else (2, 0)
    row_ptr, answers = filter_pairs(queries, known, direction)
    out = []
    side = "tails" if direction == 1 else "heads"
    for start in progress.bar(range(0, len(queries), batch_size), desc=f"rank {side}", unit="batch"):
        q = queries[start:start + batch_size]
        scores = score_fn(q[:, a_col], q[:, 1], direction)
        rows = torch.arange(len(q))
        target = scores[rows, q[:, b_col]].clone()
        if torch.isnan(scores.amax(1)).any():  # amax propagates NaN; ~4x cheaper than isnan(scores).any()
            raise ValueError("NaN model score: the embeddings diverged")
        lo, hi = int(row_ptr[start]), int(row_ptr[start + len(q)])
        counts = row_ptr[start + 1:start + len(q) + 1] - row_ptr[start:start + len(q)]
        scores[rows.repeat_interleave(counts), answers[lo:hi]] = float("-inf")  # includes the target itself
        # 1 + #better + 0.5 #equal = 1 + 0.5 (#entities + sum sign(score - target)): filtered (-inf) entries
        # give -1 and count 0. One in-place pass instead of two compare-and-count passes (~10x faster on CPU,
        # measured); the float32 sum of +-1 and 0 is exact below 2^24 entities.
        signs = scores.sub_(target[:, None]).sign_().sum(1).double()
        out.append(1.0 + 0.5 * (scores.shape[1] + signs))
    return torch.cat(out)


def summarize(rank: Tensor) -> dict[str, float]:
    if not torch.isfinite(rank).all():
        raise ValueError("non-finite rank: a model score was NaN/inf")
    metrics = {"mrr": float((1.0 / rank).mean()), "mr": float(rank.mean())}
    metrics |= {f"hits{k}": float((rank <= k).double().mean()) for k in HITS}
    return metrics


def filtered_metrics(score_fn: ScoreFn, queries: Tensor, known: Tensor, batch_size: int = 512) -> dict[str, float]:
    """Metrics over head and tail prediction together (both directions of every query triple)."""
    both = torch.cat([ranks(score_fn, queries, known, 1, batch_size), ranks(score_fn, queries, known, -1, batch_size)])
    return summarize(both)
