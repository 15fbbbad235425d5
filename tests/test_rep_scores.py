"""Each base model's score against a hand-computed case: tiny embeddings, the numbers worked out below."""

from __future__ import annotations

import math

import pytest
import torch

from replications.rep.models import KGE


def model_with(kind: str, entity: list[list[float]], relation: list[list[float]], gamma: float = 6.0,
               **kw) -> KGE:
    n_rel = len(relation) // 2 if kw.get("reciprocal") else len(relation)
    m = KGE(kind, len(entity), n_rel, len(entity[0]), gamma, **kw)
    with torch.no_grad():
        m.entity.copy_(torch.tensor(entity))
        m.relation.copy_(torch.tensor(relation))
    return m


def score(m: KGE, h: int, r: int, t: int, direction: int = 1) -> float:
    """Score of (h, r, t) as a tail query (direction +1) or a head query (-1)."""
    anchor, cand = (h, t) if direction == 1 else (t, h)
    q = m.context(m.entity, m.relation, torch.tensor([anchor]), torch.tensor([r]), direction)
    return m.match(q, m.entity[[cand]]).item()


def test_transe() -> None:
    # h = (1, 0), r = (0, 1), t = (4, 5): h + r - t = (-3, -4), ||.||_2 = 5, score = gamma - 5 = 1
    m = model_with("transe", [[1, 0], [4, 5]], [[0, 1]])
    assert score(m, 0, 0, 1) == pytest.approx(1.0)
    assert score(m, 0, 0, 1, -1) == pytest.approx(1.0)  # head query t - r = (4, 4), minus h = (3, 4): 5 again


def test_distmult() -> None:
    # <h, r, t> = 1*2*1 + 2*0*1 + 3*(-1)*1 = -1, the same both ways (DistMult is symmetric)
    m = model_with("distmult", [[1, 2, 3], [1, 1, 1]], [[2, 0, -1]])
    assert score(m, 0, 0, 1) == pytest.approx(-1.0) and score(m, 0, 0, 1, -1) == pytest.approx(-1.0)
    assert score(m, 1, 0, 0) == pytest.approx(-1.0)


def test_complex() -> None:
    # h = 1 + 2i, r = 3 - i, t = 2 + i. h r = 5 + 5i; Re(h r conj(t)) = Re((5 + 5i)(2 - i)) = Re(15 + 5i) = 15.
    # Head query: t conj(r) = (2 + i)(3 + i) = 5 + 5i, and <(5, 5), (1, 2)> = 15 as well.
    # Swapping h and t: Re(t r conj(h)) = Re((7 + i)(1 - 2i)) = Re(9 - 13i) = 9: ComplEx is not symmetric.
    m = model_with("complex", [[1, 2], [2, 1]], [[3, -1]])
    assert score(m, 0, 0, 1) == pytest.approx(15.0) and score(m, 0, 0, 1, -1) == pytest.approx(15.0)
    assert score(m, 1, 0, 0) == pytest.approx(9.0)


def test_complex_reciprocal_head_query_uses_the_inverse_row() -> None:
    # Rows 0 (r) and 1 (r + R, the inverse). Head query of (h, r, t) = tail query of (t, r^-1, h):
    # t r^-1 = (2 + i)(1 + 0i) = 2 + i, <(2, 1), (1, 2)> = 4 (not 15: the inverse row is its own parameter).
    m = model_with("complex", [[1, 2], [2, 1]], [[3, -1], [1, 0]], reciprocal=True)
    assert score(m, 0, 0, 1) == pytest.approx(15.0) and score(m, 0, 0, 1, -1) == pytest.approx(4.0)


def test_rotate() -> None:
    # phase = rel / (range / pi); rel = range / 2 gives a quarter turn. h = 1 + 0i -> h o e^{i pi/2} = i = (0, 1).
    # t = 3 + 5i: ||(0 - 3, 1 - 5)||_2 = 5, score = gamma - 5 = 1. Head query: t o e^{-i pi/2} = 5 - 3i,
    # minus h = (4, -3): distance 5 again.
    m = KGE("rotate", 2, 1, 2, 6.0)
    m = model_with("rotate", [[1, 0], [3, 5]], [[m.embedding_range / 2]])
    assert score(m, 0, 0, 1) == pytest.approx(1.0, abs=1e-5)
    assert score(m, 0, 0, 1, -1) == pytest.approx(1.0, abs=1e-5)
    assert m.operators(m.relation).tolist()[0] == pytest.approx([math.cos(math.pi / 2), 1.0], abs=1e-6)


@pytest.mark.parametrize("kind", ["transe", "distmult", "complex", "rotate"])
def test_ranking_scores_order_candidates_like_the_score(kind: str) -> None:
    torch.manual_seed(0)
    m = KGE(kind, 30, 2, 8, 4.0)
    q = m.context(m.entity, m.relation, torch.arange(5), torch.tensor([0, 1, 0, 1, 0]), 1)
    assert torch.equal(m.rank_scores(q, m.entity).argsort(1), m.match(q, m.entity).argsort(1))


def test_official_l1_distances() -> None:
    # TransE, RotatE repo's L1: h + r - t = (-3, -4) -> |.|_1 = 7, score = 6 - 7 = -1 (L2 gave 1 above).
    m = model_with("transe", [[1, 0], [4, 5]], [[0, 1]], distance="l1")
    assert score(m, 0, 0, 1) == pytest.approx(-1.0)
    # RotatE, sum of complex moduli: h = (1, 1) real, both coordinates turned a quarter: h o r = (i, i);
    # t = (3 + 5i, 3 + 5i): |i - (3 + 5i)| = |-3 - 4i| = 5 per coordinate, sum 10, score 6 - 10 = -4
    # (L2 over the whole vector would be sqrt(50) = 7.07).
    half = KGE("rotate", 2, 1, 4, 6.0).embedding_range / 2
    m = model_with("rotate", [[1, 1, 0, 0], [3, 3, 5, 5]], [[half, half]], distance="l1")
    assert score(m, 0, 0, 1) == pytest.approx(-4.0, abs=1e-5)


@pytest.mark.parametrize("kind", ["transe", "rotate"])
def test_l1_all_candidates_agree_with_pairs_and_blocks(kind: str, monkeypatch) -> None:
    torch.manual_seed(1)
    m = KGE(kind, 30, 2, 8, 4.0, distance="l1")
    q = m.context(m.entity, m.relation, torch.arange(6), torch.tensor([0, 1] * 3), 1)
    full = m.match(q, m.entity)
    monkeypatch.setattr("replications.rep.models.CHUNK_ELEMENTS", 50)  # forces one query row per block
    assert torch.allclose(m.match(q, m.entity), full, atol=1e-5)
    pairs = m.match_pairs(q, m.entity[:6])
    assert torch.allclose(pairs, full.diagonal(), atol=1e-5)
    assert torch.equal(m.rank_scores(q, m.entity).argsort(1), full.argsort(1))
    with pytest.raises(ValueError, match="valid: l2, l1"):
        KGE(kind, 3, 1, 4, 1.0, distance="l3")
