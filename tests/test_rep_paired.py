"""REP's paired Δ MRR over test triples: hand-computed cases and agreement with the evaluator."""

from __future__ import annotations

import math

import pytest
import torch

from replications.rep.evaluate import filtered_metrics
from replications.rep.paired import metrics_of, paired_mrr_change, triple_ranks
from tests.test_rep_evaluate import random_kg


def test_hand_computed_change_and_interval() -> None:
    # triple 1: tail rank 1 -> 1, head 2 -> 1 (+0.25); triple 2: 4 -> 2 and 1 -> 1 (+0.125); triple 3: 1 -> 2, 1 -> 1 (-0.25)
    before = torch.tensor([[1.0, 2.0], [4.0, 1.0], [1.0, 1.0]])
    after = torch.tensor([[1.0, 1.0], [2.0, 1.0], [2.0, 1.0]])
    out = paired_mrr_change(before, after)
    diffs = [0.25, 0.125, -0.25]
    mean = sum(diffs) / 3
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / 2)
    assert out["delta"] == pytest.approx(mean)
    assert out["ci95_high"] - out["delta"] == pytest.approx(1.959963984540054 * sd / math.sqrt(3))
    assert (out["triples"], out["changed"]) == (3, 3)
    # the mean over triples of the per-triple change is the change of the MRR over both directions
    assert out["delta"] == pytest.approx(metrics_of(after)["mrr"] - metrics_of(before)["mrr"])


def test_no_change_has_a_zero_width_interval() -> None:
    r = torch.tensor([[1.0, 3.0], [2.0, 5.0]])
    out = paired_mrr_change(r, r.clone())
    assert out["delta"] == out["ci95_low"] == out["ci95_high"] == 0.0 and out["changed"] == 0


def test_mismatched_ranks_are_refused() -> None:
    with pytest.raises(ValueError, match="paired ranks"):
        paired_mrr_change(torch.ones(3, 2), torch.ones(4, 2))


def test_triple_ranks_give_the_evaluators_metrics() -> None:
    triples, tail_table, head_table = random_kg(3)

    def score(anchor: torch.Tensor, r: torch.Tensor, direction: int) -> torch.Tensor:
        return (tail_table if direction == 1 else head_table)[anchor, r].clone()

    queries = triples[:20]
    assert metrics_of(triple_ranks(score, queries, triples)) == pytest.approx(filtered_metrics(score, queries, triples))
