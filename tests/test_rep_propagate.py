"""REP properties: identity cases, fixed points of exact fits, the official per-entity loop, hand cases."""

from __future__ import annotations

import math

import pytest
import torch

from replications.rep.models import KGE, MODELS
from replications.rep.propagate import rep, rep_reference


def random_train(n_ent: int = 20, n_rel: int = 3, n: int = 60, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.stack([torch.randint(n_ent - 2, (n,), generator=g), torch.randint(n_rel, (n,), generator=g),
                        torch.randint(n_ent - 2, (n,), generator=g)], 1)  # last 2 entities isolated


@pytest.mark.parametrize("kind", MODELS)
def test_identity_when_alpha_one_or_no_hops(kind: str) -> None:
    torch.manual_seed(0)
    model = KGE(kind, 20, 3, 8, 4.0)
    train = random_train()
    assert torch.equal(rep(model, train, 1.0, 5), model.entity.detach())
    assert torch.equal(rep(model, train, 0.5, 0), model.entity.detach())
    assert not torch.allclose(rep(model, train, 0.5, 1), model.entity.detach())  # the test can fail


@pytest.mark.parametrize("kind", MODELS)
@pytest.mark.parametrize("degree_weighted", [False, True])
def test_matches_official_per_entity_loop(kind: str, degree_weighted: bool) -> None:
    torch.manual_seed(1)
    model = KGE(kind, 20, 3, 8, 4.0)
    train = random_train(seed=1)
    fast = rep(model, train, 0.8, 3, degree_weighted, 0.1)
    slow = rep_reference(model, train, 0.8, 3, degree_weighted, 0.1)
    assert torch.allclose(fast, slow, atol=1e-5)
    assert torch.equal(fast[-2:], model.entity.detach()[-2:])  # isolated entities never move


def test_relations_are_never_updated() -> None:
    model = KGE("rotate", 20, 3, 8, 4.0)
    before = model.relation.detach().clone()
    rep(model, random_train(), 0.5, 4)
    assert torch.equal(model.relation.detach(), before)


def test_transe_exact_fit_is_a_fixed_point() -> None:
    # Chain-free DAG with h + r = t exactly: every context of every entity equals the entity itself.
    torch.manual_seed(0)
    model = KGE("transe", 6, 2, 4, 4.0)
    with torch.no_grad():
        r = torch.randn(2, 4)
        model.relation.copy_(r)
        e0, e1 = torch.randn(4), torch.randn(4)
        model.entity.copy_(torch.stack([e0, e0 + r[0], e0 + r[0] + r[1], e1, e1 + r[1], e0 + r[1]]))
    train = torch.tensor([[0, 0, 1], [1, 1, 2], [3, 1, 4], [0, 1, 5], [5, 0, 2]])
    assert torch.allclose(rep(model, train, 0.3, 10), model.entity.detach(), atol=1e-5)
    with torch.no_grad():
        model.entity[2] += 1.0  # break the fit: now it must move
    assert not torch.allclose(rep(model, train, 0.3, 1), model.entity.detach(), atol=1e-3)


def test_rotate_exact_fit_is_a_fixed_point() -> None:
    torch.manual_seed(0)
    model = KGE("rotate", 3, 1, 4, 4.0)
    phase = torch.tensor([0.7, -1.9])
    with torch.no_grad():
        model.relation.copy_((phase * model.embedding_range / math.pi)[None])
        h = torch.complex(torch.randn(2), torch.randn(2))
        t = h * torch.exp(1j * phase)
        u = t * torch.exp(1j * phase)
        model.entity.copy_(torch.stack([torch.cat([x.real, x.imag]) for x in (h, t, u)]))
    train = torch.tensor([[0, 0, 1], [1, 0, 2]])
    assert torch.allclose(rep(model, train, 0.5, 6), model.entity.detach(), atol=1e-5)


def test_hand_computed_transe_hop() -> None:
    # Entity 1 has one head neighbour (0, r0, 1): context e0 + r0; entity 0 has context e1 - r0.
    model = KGE("transe", 2, 1, 1, 1.0)
    with torch.no_grad():
        model.entity.copy_(torch.tensor([[0.0], [10.0]]))
        model.relation.copy_(torch.tensor([[4.0]]))
    out = rep(model, torch.tensor([[0, 0, 1]]), 0.75, 1)
    assert out.flatten().tolist() == [0.75 * 0 + 0.25 * 6.0, 0.75 * 10 + 0.25 * 4.0]


def test_hand_computed_degree_weighting() -> None:
    # Entity 2 has head neighbours 0 (indeg 1) and 1 (indeg 1 + 3 = 4): weights 1 : 4^0.5 = 1 : 2.
    model = KGE("distmult", 4, 1, 1, 1.0)
    with torch.no_grad():
        model.entity.copy_(torch.tensor([[3.0], [6.0], [0.0], [1.0]]))
        model.relation.copy_(torch.tensor([[1.0]]))
    train = torch.tensor([[0, 0, 2], [1, 0, 2], [3, 0, 1], [3, 0, 1], [3, 0, 1]])
    out = rep(model, train, 0.0, 1, degree_weighted=True, degree_w=0.5)
    assert abs(out[2].item() - (3.0 * 1 + 6.0 * 2) / 3) < 1e-6


def test_bad_arguments() -> None:
    model = KGE("transe", 3, 1, 2, 1.0)
    with pytest.raises(ValueError, match="alpha"):
        rep(model, torch.tensor([[0, 0, 1]]), 1.5, 1)
    with pytest.raises(ValueError, match="khop"):
        rep(model, torch.tensor([[0, 0, 1]]), 0.5, -1)
    with pytest.raises(ValueError, match="unknown KGE"):
        KGE("ote", 3, 1, 2, 1.0)


@pytest.mark.parametrize("kind", ["distmult", "complex"])
def test_reciprocal_models_propagate_heads_through_the_inverse_relation(kind: str) -> None:
    torch.manual_seed(2)
    model = KGE(kind, 20, 3, 8, 4.0, reciprocal=True, init_scale=0.5)
    assert model.relation.shape[0] == 6
    train = random_train(seed=2)
    fast = rep(model, train, 0.8, 2)
    assert torch.allclose(fast, rep_reference(model, train, 0.8, 2), atol=1e-5)
    # The inverse rows matter: with them replaced by the forward rows' conjugate rule, REP changes.
    plain = KGE(kind, 20, 3, 8, 4.0)
    with torch.no_grad():
        plain.entity.copy_(model.entity)
        plain.relation.copy_(model.relation[:3])
    assert not torch.allclose(fast, rep(plain, train, 0.8, 2), atol=1e-3)
