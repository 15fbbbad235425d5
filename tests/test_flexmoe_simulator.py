"""The step-time model and the placement policies (replications/flexmoe/stepmodel.py, policies.py) against
hand-computed cases, the trace statistics (stats.py) against planted loads, and the trace grouping."""

from __future__ import annotations

import numpy as np
import pytest

from replications.flexmoe import policies, stats
from replications.flexmoe.simulate import rank_counts
from replications.flexmoe.stepmodel import (
    a2a_seconds,
    compute_seconds,
    dispatch_matrix,
    make_cluster,
    step_seconds,
    sync_seconds,
)
from replications.moe.costmodel import CostModel


def cluster(W=2, G=1, alpha_intra=0.0, beta_intra=0.0, alpha_inter=0.0, beta_inter=0.0, flops=12.0):
    """d = h = 1, 1 byte per value: a token is 1 byte, an expert 2 bytes, compute = max load * 12 / flops."""
    cost = CostModel(alpha_intra, beta_intra, alpha_inter, {"x": beta_inter}, {"x": 0.0})
    return make_cluster(W, G, cost, "x", 1, 1, 1, flops)


def test_dispatch_splits_replicas_evenly_and_keeps_shadowed_experts_home():
    T = np.array([[1.0, 3.0], [2.0, 2.0]])  # [source, expert]
    np.testing.assert_allclose(dispatch_matrix(T, np.eye(2, dtype=bool)), T)
    both = np.array([[True, False], [True, True]])  # expert 1 on ranks 0 and 1
    np.testing.assert_allclose(dispatch_matrix(T, both), [[1 + 1.5, 1.5], [2 + 1, 1]])
    shadow = np.array([False, True])
    np.testing.assert_allclose(dispatch_matrix(T, np.eye(2, dtype=bool), shadow), [[1 + 3, 0], [2, 2]])
    with pytest.raises(ValueError, match="no replica"):
        dispatch_matrix(T, np.array([[True, True], [False, False]]))


def test_a2a_compute_and_sync_by_hand():
    c = cluster(W=2, G=1, alpha_intra=1.0, alpha_inter=10.0, beta_inter=0.001)
    M = np.array([[5.0, 100.0], [20.0, 1.0]])
    # one rank per node: no intra peers; node 0's link sends 100 bytes and receives 20: 10 + 0.001 * 100
    assert a2a_seconds(M, c) == pytest.approx(10.1)
    assert compute_seconds(M, c) == pytest.approx(101.0)  # rank 1 computes 100 + 1 rows, 12 flops each / 12
    R = np.array([[True, True], [False, True]])  # expert 0 on both nodes: ring all-reduce of 2 bytes over 2 ranks
    assert sync_seconds(R, c) == pytest.approx(2 * (10.0 + 0.001 * 1.0))
    parts = step_seconds(np.array([[5.0, 100.0], [20.0, 1.0]]), np.eye(2, dtype=bool), c)
    assert parts["a2a"] == pytest.approx(4 * 10.1) and parts["sync"] == 0 and parts["shadow"] == 0


def test_intra_node_bytes_use_the_intra_terms():
    c = cluster(W=2, G=2, alpha_intra=1.0, beta_intra=0.5, alpha_inter=99.0, beta_inter=99.0)
    M = np.array([[0.0, 4.0], [6.0, 0.0]])  # one node: (G-1) alpha_a + beta_a * max(sent, received) = 1 + 0.5 * 6
    assert a2a_seconds(M, c) == pytest.approx(4.0)


def test_fastermoe_shadows_the_most_loaded_experts_while_latency_improves():
    T = np.array([[90.0, 10.0], [90.0, 10.0]])
    R = np.eye(2, dtype=bool)
    # static: rank 0 computes 180 rows. Shadow expert 0: ranks compute 90 and 90 + 2 x 10 = 110; both: 100 each
    free = cluster()  # compute only, free broadcast: shadow both
    np.testing.assert_array_equal(policies.fastermoe_shadow(T, R, free), [True, True])
    assert policies.run_fastermoe(T[None], free)["seconds"][0] == pytest.approx(100.0)
    # 2 x 6 s per shadowed expert (+ 4 x 6 s a2a latency in every case): 110 + 12 < 100 + 24, and the greedy
    # loop stops at the first increase
    np.testing.assert_array_equal(policies.fastermoe_shadow(T, R, cluster(alpha_inter=6.0)), [True, False])
    dear = cluster(alpha_inter=50.0)  # 110 + 100 > 180: not worth it
    np.testing.assert_array_equal(policies.fastermoe_shadow(T, R, dear), [False, False])


def test_flexmoe_replicates_the_hot_expert_when_the_transfer_pays():
    window = np.array([[90.0, 10.0], [90.0, 10.0]])
    R = np.eye(2, dtype=bool)
    cfg = policies.FlexConfig(interval=10, extra_slots=1, max_ops=4, threshold=1.05)
    new, cost, ops = policies.plan(R, window, cluster(), cfg)
    assert ops == ["replicate"] and cost == 0.0
    np.testing.assert_array_equal(new, [[True, True], [False, True]])  # expert 0 now on both ranks: 90 / 110
    # a transfer of 2 bytes at 1000 s + 1 s/byte costs more than 10 steps x (180 - 110) s saved: no operation
    _, cost, ops = policies.plan(R, window, cluster(alpha_inter=1000.0, beta_inter=1.0), cfg)
    assert ops == [] and cost == 0.0
    # a balanced window is below the threshold: the scheduler does nothing
    assert policies.plan(R, np.full((2, 2), 50.0), cluster(), cfg)[2] == []


def test_flexmoe_shrinks_replicas_whose_sync_costs_more_than_they_save():
    R = np.ones((2, 2), dtype=bool)  # both experts on both ranks: balanced, but two all-reduces of 2 x 20 s
    window = np.full((2, 2), 5.0)
    cfg = policies.FlexConfig(interval=10, extra_slots=1, max_ops=4, threshold=0.5)
    new, cost, ops = policies.plan(R, window, cluster(alpha_inter=20.0), cfg)
    # shrink one: compute 10 -> 15, sync 80 -> 40; shrink the other: compute 10, sync 0; shrinking moves nothing
    assert ops == ["shrink", "shrink"] and cost == 0.0
    np.testing.assert_array_equal(new.sum(1), [1, 1])
    np.testing.assert_array_equal(new.sum(0), [1, 1])


def test_flexmoe_can_swap_a_replica_for_the_new_hot_expert():
    R = np.array([[True, True], [False, True]])  # expert 0 replicated, but expert 1 is now the hot one; ranks full
    window = np.array([[10.0, 90.0], [10.0, 90.0]])
    new, _, ops = policies.plan(R, window, cluster(alpha_inter=20.0), policies.FlexConfig(10, 1, 4, 1.0))
    assert ops[0] == "shrink_replicate"
    np.testing.assert_array_equal(new, [[False, True], [True, True]])


def test_a_lagged_scheduler_pays_for_fluctuation_and_not_for_a_steady_hot_expert():
    cfg = policies.FlexConfig(interval=2, extra_slots=1, max_ops=2, threshold=1.05)
    hot0, hot1 = np.array([[90.0, 10.0], [90.0, 10.0]]), np.array([[10.0, 90.0], [10.0, 90.0]])
    c = cluster()
    steady = np.stack([hot0] * 8)
    lag, oracle = policies.run_flexmoe(steady, c, cfg), policies.run_flexmoe(steady, c, cfg, oracle=True)
    assert lag["seconds"][2:] == pytest.approx(oracle["seconds"][2:])  # after the first window: the same plan
    flipping = np.stack([hot0, hot0, hot1, hot1] * 2)  # the hot expert changes every window
    lag, oracle = policies.run_flexmoe(flipping, c, cfg), policies.run_flexmoe(flipping, c, cfg, oracle=True)
    assert np.mean(lag["seconds"]) > np.mean(oracle["seconds"])
    static = policies.run_static(flipping, c)
    assert np.mean(oracle["seconds"]) < np.mean(static["seconds"])


def test_rank_counts_group_sources_and_scale_to_the_modelled_batch():
    routed = np.arange(2 * 1 * 4 * 2).reshape(2, 1, 4, 2)  # [steps, layers, 4 sources, 2 experts]
    out = rank_counts(routed, 2, tokens_per_source=8, tokens_per_rank=32)  # 2 sources (16 tokens) per rank -> 32
    np.testing.assert_allclose(out[0, 0], 2 * np.array([[0 + 2, 1 + 3], [4 + 6, 5 + 7]]))
    with pytest.raises(ValueError, match="do not group"):
        rank_counts(routed, 3, 8, 32)


def test_trace_statistics_on_planted_loads():
    steady = np.tile([30.0, 10.0, 10.0, 10.0], (40, 1))
    s = stats.summarise(steady, window=10)
    assert s["imbalance_mean"] == pytest.approx(2.0) and s["tv_consecutive"] == 0.0
    assert s["spearman_consecutive"] != s["spearman_consecutive"] or s["hot_expert_changes"] == 0  # ties: no order
    drifting = np.concatenate([np.tile([30.0, 10, 10, 10], (20, 1)), np.tile([10.0, 10, 10, 30], (20, 1))])
    d = stats.summarise(drifting, window=10)
    assert d["tv_consecutive"] == pytest.approx((0 + 1 / 3 + 0) / 3)  # one jump of TV 1/3 among 3 window pairs
    assert d["hot_expert_changes"] == 1 and d["tv_over_noise"] > 1
    assert stats.tv_distance(np.array([1.0, 0]), np.array([0.0, 1])) == 1.0
