"""The fused L1 kernel (replications/rep/l1score.py) against the naive formula: values, gradients, ties, threads,
the fallback, and the filtered ranks of the evaluator and a training step of TransE, kernel vs torch.cdist."""

from __future__ import annotations

import pytest
import torch
from omegaconf import OmegaConf

from replications.rep import l1score
from replications.rep.bench_l1 import agreement, kernel_vs_bound
from replications.rep.evaluate import ranks
from replications.rep.l1score import l1_distances
from replications.rep.models import KGE
from replications.rep.train import fit

needs_kernel = pytest.mark.skipif(l1score.kernel() is None, reason=f"no fused L1 kernel here: {l1score.backend()}")

# (B, N, d): single rows, blocks of 4 with remainders, tile boundaries (64 candidates), d below / across one vector
SHAPES = [(1, 1, 1), (3, 5, 7), (4, 4, 16), (5, 130, 33), (9, 257, 1000), (64, 129, 17)]


def naive(q: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    return (q[:, None, :] - e[None, :, :]).abs().sum(-1)


@pytest.fixture
def no_kernel(monkeypatch):
    """The fallback path, as on a machine without a C compiler."""
    monkeypatch.setattr(l1score, "_lib", None)
    monkeypatch.setattr(l1score, "_why_not", "test: kernel disabled")


@needs_kernel
@pytest.mark.parametrize("shape", SHAPES)
def test_values_and_gradients_match_the_naive_formula(shape) -> None:
    b, n, d = shape
    g = torch.Generator().manual_seed(b * 1000 + n + d)
    q = torch.randn(b, d, generator=g, requires_grad=True)
    e = torch.randn(n, d, generator=g, requires_grad=True)
    out = l1_distances(q, e)
    q64, e64 = q.detach().double().requires_grad_(), e.detach().double().requires_grad_()
    ref = naive(q64, e64)
    assert out.shape == (b, n) and out.dtype == torch.float32
    assert torch.allclose(out.double(), ref, rtol=1e-5, atol=1e-5)
    upstream = torch.randn(b, n, generator=g)
    gq, ge = torch.autograd.grad(out, (q, e), upstream)
    rq, re = torch.autograd.grad(ref, (q64, e64), upstream.double())
    assert torch.allclose(gq.double(), rq, rtol=1e-4, atol=1e-4)
    assert torch.allclose(ge.double(), re, rtol=1e-4, atol=1e-4)


@needs_kernel
def test_hand_computed_case_and_zero_gradient_at_equal_coordinates() -> None:
    q = torch.tensor([[1.0, 0.0, 2.0]], requires_grad=True)
    e = torch.tensor([[4.0, 5.0, 2.0], [1.0, 0.0, 2.0]], requires_grad=True)
    out = l1_distances(q, e)
    assert out.tolist() == [[8.0, 0.0]]  # |1-4| + |0-5| + |2-2| = 8; itself: 0
    gq, ge = torch.autograd.grad(out, (q, e), torch.tensor([[1.0, 10.0]]))
    # d/dq: sign(q - e0) = (-1, -1, 0) times 1; sign(q - e1) = 0 everywhere (abs's subgradient at 0, as autograd)
    assert gq.tolist() == [[-1.0, -1.0, 0.0]]
    assert ge.tolist() == [[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]


@needs_kernel
def test_identical_candidates_tie_exactly_wherever_they_sit() -> None:
    g = torch.Generator().manual_seed(0)
    q = torch.randn(7, 1003, generator=g)  # 1003: a scalar tail after the vector loop
    e = torch.randn(300, 1003, generator=g)
    spots = (1, 5, 63, 64, 127, 128, 131, 298, 299)  # inside 4-blocks, at tile edges, in the remainder columns
    for pos in spots:
        e[pos] = e[0]
    out = l1_distances(q, e)
    for pos in spots:
        assert torch.equal(out[:, pos], out[:, 0])
    assert torch.equal(l1_distances(e[:5], e)[torch.arange(5), torch.arange(5)], torch.zeros(5))


@needs_kernel
@pytest.mark.parametrize("d", [1, 2, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 47])
def test_every_tail_length_gives_exact_ties_and_right_values(d) -> None:
    """The last d % lanes coordinates are one masked vector step (the vector ending at d, or the row right-aligned
    in zeros when d is below one vector): values stay right and ties stay exact for every remainder, in 4 x 4 blocks
    and on the edges (a short last row block, columns left in a tile), lanes 8 (AVX2) or 16 (AVX-512)."""
    g = torch.Generator().manual_seed(d)
    q = torch.randn(6, d, generator=g)  # rows 0-3 one 4-block, rows 4-5 the short edge
    e = torch.randn(70, d, generator=g)  # columns 0-63 one tile, 64-67 a block of the next, 68-69 its edge
    q[5] = q[0]
    spots = (2, 63, 64, 66, 69)
    for pos in spots:
        e[pos] = e[0]
    out = l1_distances(q, e)
    assert torch.allclose(out.double(), naive(q.double(), e.double()), rtol=1e-6, atol=1e-5)
    assert torch.equal(out[5], out[0])  # the same query in a block and on the edge
    for pos in spots:
        assert torch.equal(out[:, pos], out[:, 0])
    assert torch.equal(l1_distances(e[:5], e)[torch.arange(5), torch.arange(5)], torch.zeros(5))


@needs_kernel
def test_the_bound_does_all_the_differences_it_is_credited_with() -> None:
    """bench_l1 divides the bound's time by 8 x n x reps differences: it must compute them all (a compiler that
    dropped repeated passes would inflate the bound). On a grid of halves every sum is exact, so the answer is exact."""
    lib = l1score.kernel()
    lanes = lib.l1_lanes()
    assert lanes in (8, 16)
    g = torch.Generator().manual_seed(4)
    n, reps = 64 * lanes, 5
    a = torch.randint(-8, 9, (n,), generator=g).float() / 2
    b = torch.randint(-8, 9, (8, lanes), generator=g).float() / 2
    out = torch.full((8,), 1.0)  # added to, not overwritten
    lib.l1_bound(l1score._ptr(a), n, l1score._ptr(b), reps, l1score._ptr(out))
    want = (a.view(-1, lanes)[:, None, :] - b[None]).abs().sum((0, 2)) * reps + 1
    assert torch.equal(out, want)


@needs_kernel
def test_kernel_vs_bound_record_is_consistent() -> None:
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        got = kernel_vs_bound(shape=(8, 100, 40), rounds=3)
        assert torch.get_num_threads() == 2  # restored: one thread only while timing
    finally:
        torch.set_num_threads(before)
    assert got["rounds"] == 3 and got["shape"] == {"queries": 8, "candidates": 100, "dim": 40}
    assert got["kernel_rate"] > 0 and got["bound_rate"] > 0
    low, high = got["kernel_over_bound_range"]
    assert low <= got["kernel_over_bound"] <= high
    assert got["meets_target"] == (got["kernel_over_bound"] >= got["target"])
    assert got["vector_lanes"] == l1score.kernel().l1_lanes() and "-ffp-contract=off" in got["compiler_flags"]


def test_kernel_vs_bound_says_why_it_was_skipped(no_kernel) -> None:
    assert kernel_vs_bound(shape=(4, 4, 4), rounds=1) == {"skipped": "no kernel here: cdist (test: kernel disabled)"}


@needs_kernel
def test_thread_count_does_not_change_the_forward_bits() -> None:
    g = torch.Generator().manual_seed(3)
    q, e = torch.randn(300, 100, generator=g), torch.randn(1000, 100, generator=g)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = (l1_distances(q, e), l1_distances(q[:10], e))
        torch.set_num_threads(2)
        two = (l1_distances(q, e), l1_distances(q[:10], e))  # split by rows, then by columns
    finally:
        torch.set_num_threads(before)
    assert torch.equal(one[0], two[0]) and torch.equal(one[1], two[1])


def test_fallback_equals_the_kernel_and_bad_shapes_are_refused(no_kernel) -> None:
    assert l1score.backend().startswith("cdist")
    g = torch.Generator().manual_seed(1)
    q, e = torch.randn(6, 20, generator=g), torch.randn(5000, 20, generator=g)  # > one fallback block
    assert torch.allclose(l1_distances(q, e), naive(q, e), rtol=1e-5, atol=1e-4)
    with pytest.raises(ValueError, match="same d"):
        l1_distances(q, e[:, :19])


def test_a_failed_build_warns_once_and_falls_back(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(l1score, "_lib", None)
    monkeypatch.setattr(l1score, "_why_not", None)
    monkeypatch.setenv("REPLICATIONS_CACHE", str(tmp_path))
    monkeypatch.setenv("CC", "false")  # a "compiler" that always fails
    with pytest.warns(RuntimeWarning, match="fused L1 kernel unavailable"):
        assert l1score.kernel() is None
    assert l1score.backend().startswith("cdist (false failed")
    q = torch.ones(2, 3)
    assert l1_distances(q, torch.zeros(4, 3)).tolist() == [[3.0] * 4] * 2


def grid_transe(seed: int, n_ent: int = 200, n_rel: int = 5, dim: int = 37) -> KGE:
    """TransE with embeddings on a 1/8 grid (every distance exact) and duplicated entities (exact ties)."""
    g = torch.Generator().manual_seed(seed)
    m = KGE("transe", n_ent, n_rel, dim, 6.0, distance="l1")
    with torch.no_grad():
        m.entity.copy_(torch.randint(-4, 5, (n_ent, dim), generator=g) / 8.0)
        m.relation.copy_(torch.randint(-4, 5, (n_rel, dim), generator=g) / 8.0)
        m.entity[100:140] = m.entity[:40]
    return m


@needs_kernel
def test_filtered_ranks_are_identical_to_the_cdist_scorer(monkeypatch) -> None:
    m = grid_transe(0)
    g = torch.Generator().manual_seed(1)
    triples = torch.stack([torch.randint(200, (600,), generator=g), torch.randint(5, (600,), generator=g),
                           torch.randint(200, (600,), generator=g)], 1)
    queries, known = triples[:150], triples

    def scores(anchor, r, direction):
        return m.rank_scores(m.context(m.entity.detach(), m.relation.detach(), anchor, r, direction), m.entity.detach())

    with torch.no_grad():
        fused = [ranks(scores, queries, known, d, batch_size=64) for d in (1, -1)]
        monkeypatch.setattr(l1score, "_lib", None)
        monkeypatch.setattr(l1score, "_why_not", "test: kernel disabled")
        plain = [ranks(scores, queries, known, d, batch_size=64) for d in (1, -1)]
    assert all(torch.equal(a, b) for a, b in zip(fused, plain))
    assert any((r % 1 != 0).any() for r in fused)  # the planted duplicates did tie with some true answers


@needs_kernel
def test_training_steps_match_the_cdist_scorer(monkeypatch) -> None:
    g = torch.Generator().manual_seed(2)
    train = torch.stack([torch.randint(50, (400,), generator=g), torch.randint(4, (400,), generator=g),
                         torch.randint(50, (400,), generator=g)], 1)
    hp = OmegaConf.create({"lr": 0.01, "lr_decay_at": None, "batch_size": 64, "negatives": 32,
                           "adversarial_temperature": 1.0, "regularization": 0.0})

    def trained() -> tuple[torch.Tensor, KGE]:
        torch.manual_seed(0)
        m = KGE("transe", 50, 4, 40, 6.0, distance="l1")
        start = m.entity.detach().clone()
        fit(m, train, hp, 6, 0, lambda metrics, step: None)
        return start, m

    start, fused = trained()
    monkeypatch.setattr(l1score, "_lib", None)
    monkeypatch.setattr(l1score, "_why_not", "test: kernel disabled")
    _, plain = trained()
    assert (fused.entity - start).abs().max() > 1e-3  # the steps moved the embeddings
    assert torch.allclose(fused.entity, plain.entity, atol=1e-5)
    assert torch.allclose(fused.relation, plain.relation, atol=1e-5)


def test_bench_agreement_finds_a_differing_rank_on_the_triples_both_ranked() -> None:
    suite = {"tails": torch.tensor([1.0, 2.5, 3.0]), "heads": torch.tensor([4.0, 5.0, 6.0])}
    theirs = {"tails": torch.tensor([1.0, 2.5]), "heads": torch.tensor([4.0, 5.5])}  # PyKEEN ranked 2 of 3 triples
    got = agreement(suite, theirs)
    assert got["ranks_compared"] == 4 and got["ranks_differing"] == 1 and got["max_abs_rank_difference"] == 0.5
    assert not got["ranks_identical"] and got["ranks_with_ties"] == 1
    assert got["metrics_max_abs_difference"] == pytest.approx(0.5 / 4)  # MR: (1 + 2.5 + 4 + 5) vs (... + 5.5), / 4
    assert agreement(suite, suite)["ranks_identical"]
