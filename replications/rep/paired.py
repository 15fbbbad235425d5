"""REP's effect on one seed's embeddings, with an interval over the test triples.

REP changes embeddings that are then ranked on the same test triples, so before and after are paired per
triple: the change of a triple's reciprocal rank (head and tail prediction averaged, as the two rankings of one
triple are not independent) has a mean, the Δ MRR, and a standard error over the triples. That interval says
how much of a seed's Δ MRR is the luck of which triples the test split holds; the spread over seeds (the
record's aggregate) says how much is the luck of training. With one seed only the first exists.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from replications.rep.evaluate import ScoreFn, ranks, summarize

Z95 = 1.959963984540054  # two-sided 95 % normal quantile: ~20k test triples, the t and normal quantiles agree


def triple_ranks(score_fn: ScoreFn, queries: Tensor, known: Tensor) -> Tensor:
    """(n, 2) filtered ranks of every query triple: tail prediction, head prediction."""
    return torch.stack([ranks(score_fn, queries, known, 1), ranks(score_fn, queries, known, -1)], dim=1)


def metrics_of(triple_rank: Tensor) -> dict[str, float]:
    """The evaluator's metrics over both directions (equal to ``filtered_metrics`` on the same queries)."""
    return summarize(torch.cat([triple_rank[:, 0], triple_rank[:, 1]]))


def paired_mrr_change(before: Tensor, after: Tensor) -> dict[str, float]:
    """Δ MRR (after − before) with its 95 % interval over test triples (normal approximation of a mean of
    many bounded per-triple differences). ``before``/``after``: (n, 2) ranks from ``triple_ranks``."""
    if before.shape != after.shape or before.ndim != 2 or len(before) < 2:
        raise ValueError(f"paired ranks need two equal (n >= 2, 2) tensors, got {tuple(before.shape)} and "
                         f"{tuple(after.shape)}")
    diff = (1.0 / after.double() - 1.0 / before.double()).mean(dim=1)
    mean, n = float(diff.mean()), len(diff)
    half = Z95 * float(diff.std(unbiased=True)) / math.sqrt(n)
    return {"delta": mean, "ci95_low": mean - half, "ci95_high": mean + half, "triples": n,
            "changed": int((diff != 0).sum())}
