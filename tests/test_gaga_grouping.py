"""Group aggregation: sparse blocks == the official per-node loop, by hand, and without label leakage."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from replications.gaga.grouping import NEG, OTHER, POS, group_ids, group_sequences, reference_sequences


def path_graph() -> sp.csr_matrix:
    """0 - 1 - 2 - 3 (undirected)."""
    rows, cols = [0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]
    return sp.csr_matrix((np.ones(6), (rows, cols)), shape=(4, 4))


def test_hand_computed_path_graph():
    x = np.array([[1, 0], [0, 2], [4, 4], [8, 0]], dtype=np.float32)
    groups = np.array([NEG, POS, OTHER, NEG])  # nodes 0, 3 train-negative; 1 train-positive; 2 val/test
    seq = group_sequences([path_graph()], x, groups, hops=2, block=2)
    assert seq.shape == (4, 7, 2)
    # node 1: hop 1 = {0,1,2}: neg {0}, pos {} (itself moved to OTHER), other {1,2}
    np.testing.assert_allclose(seq[1, 0], [0, 2])
    np.testing.assert_allclose(seq[1, 1], [1, 0])
    np.testing.assert_allclose(seq[1, 2], [0, 0])
    np.testing.assert_allclose(seq[1, 3], [2, 3])
    # node 1: hop 2 = {0,1,2,3}: neg {0,3} -> mean (4.5, 0); pos {}; other {1,2}
    np.testing.assert_allclose(seq[1, 4], [4.5, 0])
    np.testing.assert_allclose(seq[1, 5], [0, 0])
    np.testing.assert_allclose(seq[1, 6], [2, 3])
    # node 3: hop 1 = {2,3}: neg {} (3 is itself), pos {}, other {2,3}
    np.testing.assert_allclose(seq[3, 1:4], [[0, 0], [0, 0], [6, 2]])
    # node 3: hop 2 = {1,2,3}: pos {1}
    np.testing.assert_allclose(seq[3, 5], [0, 2])


@pytest.mark.parametrize("block,workers", [(7, 1), (1000, 1), (5, 2)])
def test_matches_official_loop_on_random_multirelation_graph(block, workers):
    rng = np.random.default_rng(0)
    n, f = 60, 5
    adjs = []
    for density in (0.02, 0.08, 0.3):  # sparse to dense: exercises both sparse and dense block paths
        a = sp.random(n, n, density=density, random_state=rng, data_rvs=np.ones)
        adjs.append(((a + a.T) > 0).astype(np.float32))
    x = rng.normal(size=(n, f)).astype(np.float32)
    y = rng.integers(0, 2, n)
    groups = group_ids(y, np.sort(rng.choice(n, 30, replace=False)))
    fast = group_sequences(adjs, x, groups, hops=2, block=block, workers=workers)
    np.testing.assert_allclose(fast, reference_sequences(adjs, x, groups, hops=2), atol=1e-5)
    assert fast.shape == (n, 3 * 7, f)


def test_val_and_test_labels_never_reach_the_sequences():
    rng = np.random.default_rng(1)
    n = 80
    a = sp.random(n, n, density=0.1, random_state=rng, data_rvs=np.ones)
    adj = ((a + a.T) > 0).astype(np.float32)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    y = rng.integers(0, 2, n)
    train = np.arange(0, 40)
    base = group_sequences([adj], x, group_ids(y, train))
    flipped = y.copy()
    flipped[40:] = 1 - flipped[40:]  # every val/test label inverted
    np.testing.assert_array_equal(base, group_sequences([adj], x, group_ids(flipped, train)))
    # ...while flipping train labels does change them (the test can fail)
    flipped_train = y.copy()
    flipped_train[:40] = 1 - flipped_train[:40]
    assert not np.allclose(base, group_sequences([adj], x, group_ids(flipped_train, train)))


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="0 or 1"):
        group_ids(np.array([0, 2, 1]), np.array([1]))
    with pytest.raises(ValueError, match="shapes"):
        group_sequences([path_graph()], np.zeros((3, 2), np.float32), np.zeros(3, np.int64))
