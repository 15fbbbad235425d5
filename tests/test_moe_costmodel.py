"""The α–β cost model (replications/moe/costmodel.py) recovers known α/β from synthetic timings, and its
closed-form crossover is where the predicted flat and hierarchical times meet."""

from __future__ import annotations

import numpy as np
import pytest

from replications.moe.costmodel import CostModel, features, fit

TRUE = CostModel(alpha_intra=40e-6, beta_intra=1 / 1.5e9, alpha_inter=120e-6,
                 beta_inter={"100": 8 / 100e6, "1000": 8 / 1000e6})
SIZES = [2**k for k in range(10, 24, 2)]


def synthetic(model: CostModel, noise: float, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for link in model.beta_inter:
        for N, G in [(2, 2), (2, 4)]:
            for op in ("p2p_intra", "p2p_inter", "flat"):
                for B in SIZES:
                    t = model.predict(op, N, G, B, link) * (1 + noise * rng.standard_normal())
                    rows.append({"op": op, "N": N, "G": G, "bytes": B, "link": link, "seconds": t})
    return rows


def close(a: float, b: float, rtol: float) -> bool:
    return abs(a - b) <= rtol * abs(b)


def test_fit_recovers_known_alpha_beta_exactly_without_noise():
    model, fitted = fit(synthetic(TRUE, 0.0))
    for name in ("alpha_intra", "beta_intra", "alpha_inter"):
        assert close(getattr(model, name), getattr(TRUE, name), 1e-6), name
    for link, b in TRUE.beta_inter.items():
        assert close(model.beta_inter[link], b, 1e-6), link
    assert max(abs(r["rel_residual"]) for r in fitted) < 1e-6


def test_fit_recovers_known_alpha_beta_under_noise():
    model, fitted = fit(synthetic(TRUE, 0.03, seed=1))
    assert close(model.alpha_intra, TRUE.alpha_intra, 0.1)
    assert close(model.alpha_inter, TRUE.alpha_inter, 0.1)
    assert close(model.beta_intra, TRUE.beta_intra, 0.1)
    for link, b in TRUE.beta_inter.items():
        assert close(model.beta_inter[link], b, 0.05), link
    assert 0.01 < float(np.std([r["rel_residual"] for r in fitted])) < 0.06  # the noise shows in residuals


def test_a_wrong_model_is_not_recovered():
    # timings where inter-node messages cost 10x the true α: the fit must move α_inter, not keep it
    slow = CostModel(TRUE.alpha_intra, TRUE.beta_intra, 10 * TRUE.alpha_inter, TRUE.beta_inter)
    model, _ = fit(synthetic(slow, 0.0))
    assert not close(model.alpha_inter, TRUE.alpha_inter, 0.5)
    assert close(model.alpha_inter, slow.alpha_inter, 1e-6)


@pytest.mark.parametrize("N,G", [(2, 2), (2, 4), (4, 8)])
def test_crossover_is_where_flat_and_hierarchical_meet(N, G):
    b_star = TRUE.crossover(N, G)
    assert b_star is not None and 0 < b_star < float("inf")
    diff = [TRUE.predict("flat", N, G, B, "100") - TRUE.predict("hier", N, G, B, "100")
            for B in (0.5 * b_star, b_star, 2 * b_star)]
    assert diff[0] > 0 and abs(diff[1]) < 1e-12 and diff[2] < 0


def test_no_crossover_without_nodes_to_aggregate_or_latency_gain():
    assert TRUE.crossover(1, 4) is None and TRUE.crossover(4, 1) is None
    no_gain = CostModel(TRUE.alpha_intra, TRUE.beta_intra, 0.0, TRUE.beta_inter)
    assert no_gain.crossover(2, 4) is None


def test_unknown_op_is_refused():
    with pytest.raises(ValueError, match="unknown op"):
        features("ring", 2, 2, 1024)
