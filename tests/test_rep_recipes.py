"""The 1-vs-all recipe (reciprocal relations, cross-entropy, N3): hand-checked pieces, and a planted KG it must learn."""

from __future__ import annotations

import pytest
import torch
from omegaconf import OmegaConf

from replications.rep import base_steps, score_fn
from replications.rep.evaluate import filtered_metrics
from replications.rep.models import KGE
from replications.rep.train import fit_one_vs_all, n3_factors, reciprocal_examples, steps_per_epoch

HP = OmegaConf.create({"lr": 0.1, "batch_size": 32, "n3": 1e-4})


def test_reciprocal_examples_and_steps() -> None:
    ex = reciprocal_examples(torch.tensor([[0, 1, 2], [3, 0, 4]]), num_relations=2)
    assert ex.tolist() == [[0, 1, 2], [3, 0, 4], [2, 3, 0], [4, 2, 3]]
    assert steps_per_epoch(1000, 300) == 7  # 2000 queries in batches of 300, the last one partial
    assert base_steps({"epochs": 2, "batch_size": 300}, 1000) == 14 and base_steps({"steps": 5}, 1000) == 5


def test_n3_factors_hand_case() -> None:
    x = torch.tensor([[3.0, -1.0, 4.0, 0.0]])  # ComplEx: (3 + 4i), (-1 + 0i)
    assert n3_factors("complex", x)[0].tolist() == [[5.0, 1.0]]
    assert n3_factors("distmult", x)[0].tolist() == [[3.0, 1.0, 4.0, 0.0]]


def test_head_query_of_a_reciprocal_model_is_the_inverse_tail_query() -> None:
    torch.manual_seed(0)
    model = KGE("complex", 5, 2, 4, 0.0, reciprocal=True, init_scale=1.0)
    anchor, r = torch.tensor([1, 3]), torch.tensor([0, 1])
    head_q = model.context(model.entity, model.relation, anchor, r, -1)
    assert torch.equal(head_q, model.context(model.entity, model.relation, anchor, r + 2, 1))


def successor_kg(n: int = 40, symmetric: bool = False) -> torch.Tensor:
    pairs = [(h, r, h + s) for r, s in enumerate((1, 3)) for h in range(n - s)]
    if symmetric:  # DistMult scores (h, r, t) and (t, r, h) alike, so it gets a symmetric relation to learn
        pairs += [(t, r, h) for h, r, t in pairs]
    return torch.tensor(pairs)


@pytest.mark.parametrize("kind, symmetric", [("complex", False), ("distmult", True)])
def test_planted_kg_is_learned(kind: str, symmetric: bool) -> None:
    torch.manual_seed(0)
    train = successor_kg(symmetric=symmetric)
    model = KGE(kind, 40, 2, 32, 0.0, reciprocal=True, init_scale=1e-3)
    before = filtered_metrics(score_fn(model, model.entity.detach()), train, train)["mrr"]
    fit_one_vs_all(model, train, HP, 400, seed=0, log=lambda m, s: None)
    after = filtered_metrics(score_fn(model, model.entity.detach()), train, train)
    assert before < 0.3 and after["mrr"] > 0.95, (before, after)


def test_distance_models_are_refused() -> None:
    with pytest.raises(ValueError, match="reciprocal DistMult/ComplEx"):
        fit_one_vs_all(KGE("transe", 4, 1, 4, 1.0), torch.tensor([[0, 0, 1]]), HP, 1, 0, lambda m, s: None)
    with pytest.raises(ValueError, match="reciprocal=False"):
        fit_one_vs_all(KGE("complex", 4, 1, 4, 1.0), torch.tensor([[0, 0, 1]]), HP, 1, 0, lambda m, s: None)


def test_checkpoints_exclude_their_own_time_and_can_stop() -> None:
    seen = []

    def checkpoint(step: int, seconds: float) -> bool:
        seen.append((step, seconds))
        return step >= 4

    model = KGE("distmult", 40, 2, 8, 0.0, reciprocal=True, init_scale=1e-3)
    out = fit_one_vs_all(model, successor_kg(), HP, 100, 0, lambda m, s: None, checkpoint=checkpoint,
                         checkpoint_every=2)
    assert [s for s, _ in seen] == [2, 4] and out["steps"] == 4 and seen[0][1] <= seen[1][1]


def test_time_to_target_measured_or_extrapolated() -> None:
    from replications.rep.budget import extrapolate

    pts = [{"train_cpu_seconds": s, "test_mrr": m} for s, m in ((0, 0.0), (100, 0.2), (1000, 0.3))]
    assert extrapolate(pts, 0.25)["seconds"] == 1000  # measured: first checkpoint at or above
    # 0.2 -> 0.3 from 100 s to 1000 s: 0.1 per decade of time, so 0.4 at 10,000 s
    assert extrapolate(pts, 0.4)["seconds"] == pytest.approx(10000, rel=1e-6)
    flat = [{"train_cpu_seconds": s, "test_mrr": 0.2} for s in (10, 20)]
    assert extrapolate(flat, 0.4)["seconds"] is None
