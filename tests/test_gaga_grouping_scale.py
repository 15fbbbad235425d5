"""Issue 42: the always-sparse grouping equals the old dense-above-2 % path and an exact dense computation.

Tolerances (outputs are float32): against the exact float64 computation rtol 1e-6, atol 1e-7 (the new path
accumulates in float64, so it is the exact mean rounded once); against the old path rtol 1e-6, atol 1e-6 (the
old one accumulated in float32). The graphs cross the old 2 % two-hop-density switch both ways (asserted), and
hold isolated nodes, self-loops, duplicate edges, nodes without train neighbours and an empty group.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from replications.gaga import bench_grouping as bench
from replications.gaga.grouping import N_GROUPS, NEG, OTHER, POS, group_ids, relation_sequences
from tests.conftest import needs_mirror

EXACT = {"rtol": 1e-6, "atol": 1e-7}
OLD = {"rtol": 1e-6, "atol": 1e-6}


def exact_sequences(adj: sp.spmatrix, x: np.ndarray, groups: np.ndarray, hops: int) -> np.ndarray:
    """Naive dense float64: reach = boolean powers of A + I, per-group sums by masks, v moved to OTHER."""
    n, f = x.shape
    a1 = (np.asarray(sp.csr_matrix(adj).todense()) != 0) | np.eye(n, dtype=bool)
    x64 = x.astype(np.float64)
    seq = np.zeros((n, 1 + hops * N_GROUPS, f))
    seq[:, 0] = x64
    reach = np.eye(n, dtype=bool)
    for k in range(hops):
        reach = (reach.astype(np.float32) @ a1.astype(np.float32)) > 0  # path counts < 2^24: exact
        for g in range(N_GROUPS):
            member = reach & (groups == g)[None, :]
            np.fill_diagonal(member, g == OTHER)  # v itself counts in OTHER only
            cnt = member.sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                seq[:, 1 + k * N_GROUPS + g] = np.where(cnt[:, None] > 0, (member @ x64) / cnt[:, None], 0.0)
    return seq


def two_hop_density(adj: sp.spmatrix) -> float:
    a1 = (sp.csr_matrix(adj) + sp.identity(adj.shape[0], format="csr")).astype(bool)
    return (a1 @ a1).nnz / adj.shape[0] ** 2


def awkward_graph(n: int, degree: float, seed: int) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """Random graph plus isolated nodes, self-loops, duplicated edges and a node whose neighbours are all non-train."""
    rng = np.random.default_rng(seed)
    a = bench.random_graph(n, degree, rng).tocoo()
    isolated = [n - 1, n - 2]
    keep = ~np.isin(a.row, isolated) & ~np.isin(a.col, isolated)
    rows, cols = list(a.row[keep]), list(a.col[keep])
    rows += [0, 1, 2, 3, 3]  # self-loops on 0..2; edge 3-4 stored twice more (duplicates sum in COO -> CSR)
    cols += [0, 1, 2, 4, 4]
    adj = sp.coo_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(n, n)).tocsr()
    adj = adj + adj.T
    x = rng.normal(size=(n, 6)).astype(np.float32)
    y = rng.integers(0, 2, n)
    train = np.sort(rng.choice(n - 3, n // 3, replace=False))
    groups = group_ids(y, train)
    # node n-3: its only neighbour is the isolated-from-train node n-4 (both non-train)
    groups[[n - 3, n - 4]] = OTHER
    adj = adj.tolil()
    adj[n - 3, :] = 0
    adj[:, n - 3] = 0
    adj[n - 3, n - 4] = adj[n - 4, n - 3] = 1
    return adj.tocsr(), x, groups


@pytest.mark.parametrize("n,degree,dense", [(1500, 1.5, False), (300, 12.0, True), (200, 60.0, True)])
@pytest.mark.parametrize("hops", [1, 2, 3])
def test_sparse_path_equals_exact_and_old_path_across_the_density_switch(n, degree, dense, hops):
    adj, x, groups = awkward_graph(n, degree, seed=n + hops)
    assert (two_hop_density(adj) > 0.02) == dense  # the old path took its dense branch here, or not
    new = relation_sequences(adj, x, groups, hops=hops, block=97)
    assert new.dtype == np.float32 and new.shape == (n, 1 + hops * N_GROUPS, x.shape[1])
    np.testing.assert_allclose(new, exact_sequences(adj, x, groups, hops), **EXACT)
    np.testing.assert_allclose(new, bench.previous_relation_sequences(adj, x, groups, hops=hops, block=97), **OLD)
    # isolated node: only itself, in OTHER, at every hop; the node without train neighbours has zero train groups
    for k in range(hops):
        np.testing.assert_array_equal(new[n - 1, 1 + k * N_GROUPS + OTHER], x[n - 1])
        np.testing.assert_array_equal(new[n - 1, 1 + k * N_GROUPS: 1 + k * N_GROUPS + 2], 0.0)
    np.testing.assert_array_equal(new[n - 3, 1:3], 0.0)


def test_block_size_workers_and_an_empty_group_change_nothing():
    adj, x, groups = awkward_graph(400, 20.0, seed=3)
    groups[groups == POS] = NEG  # no train positives at all: POS is empty everywhere
    ref = exact_sequences(adj, x, groups, hops=2)
    for block, workers in [(1, 1), (64, 2), (4000, 1)]:
        seq = relation_sequences(adj, x, groups, hops=2, block=block, workers=workers)
        np.testing.assert_allclose(seq, ref, **EXACT)
        assert not seq[:, [1 + POS, 4 + POS]].any()


@needs_mirror
def test_tolokers_slice_matches_the_old_path_and_the_exact_means(module_cache):
    from replications.gaga.data import load_tolokers

    graph = load_tolokers()
    adj = graph.relations["worker-task-worker"]
    assert adj.shape[0] == bench.TOLOKERS_NODES and adj.nnz == 2 * bench.TOLOKERS_EDGES  # MEAN_DEGREE's source
    keep = np.arange(1200)  # hub-heavy slice: real degrees, not uniform ones
    sub = adj[keep][:, keep].tocsr()
    groups = group_ids(graph.y, graph.split(0)[0])[keep]
    x = graph.x[keep]
    assert two_hop_density(sub) > 0.02
    new = relation_sequences(sub, x, groups, hops=2)
    np.testing.assert_allclose(new, exact_sequences(sub, x, groups, hops=2), **EXACT)
    np.testing.assert_allclose(new, bench.previous_relation_sequences(sub, x, groups, hops=2), **OLD)


def test_random_graph_has_the_asked_degree_and_no_loops_or_repeats():
    a = bench.random_graph(500, 9.0, np.random.default_rng(0))
    assert a.nnz == 2 * round(500 * 9.0 / 2) and a.diagonal().sum() == 0
    assert (a != a.T).nnz == 0 and a.max() == 1
    assert abs(bench.MEAN_DEGREE - 88.28) < 0.01


def test_exponent_fit_recovers_a_power_law():
    n = [1000, 2000, 4000, 8000]
    assert bench.fit_exponent(n, [3e-6 * v ** 1.3 for v in n]) == pytest.approx(1.3)
    assert bench.local_exponents(n, [v ** 2 for v in n]) == [2.0, 2.0, 2.0]


def test_benchmark_writes_its_record_and_figure(tmp_path, capsys):
    record = bench.main(["--sizes", "300", "150", "--repeats", "1", "--degree", "10", "--out", str(tmp_path)])
    saved = json.loads((tmp_path / "bench_grouping.json").read_text())
    assert [r["nodes"] for r in saved["rows"]] == [150, 300] and saved["exponents"] == record["exponents"]
    assert all(r["max_abs_difference"] < 1e-5 for r in saved["rows"])
    assert saved["load_average_before"] and saved["environment"]["numerics"]["cpu_flags"] is not None
    assert saved["blas"] and all(b["num_threads"] == 1 for b in saved["blas"])
    assert (tmp_path / "bench_grouping.png").stat().st_size > 0
    assert "exponents: old" in capsys.readouterr().out


def test_the_page_shows_the_committed_scaling_with_its_exponent_and_target():
    """results/gaga/bench_grouping.json on GAGA's page: a row per size, the fitted exponents, the target's verdict."""
    from replications.gaga.report import scaling_blocks
    from shared.paths import RESULTS

    record = json.loads((RESULTS / "gaga" / "bench_grouping.json").read_text())
    heading, intro, image, table = scaling_blocks(record)
    assert heading.startswith("## Grouping") and image == "![bench_grouping](bench_grouping.png)"
    assert len(table.rows) == len(record["rows"]) >= 4 and table.rows[0][0] == f"{record['rows'][0]['nodes']:,}"
    exp = record["exponents"]
    assert f"new {exp['new']}, old {exp['old']}" in table.note and f"n^{exp['two_hop_pairs']}" in table.note
    verdict = "meets" if exp["new"] <= record["target_exponent"] else "misses"
    assert f"the new path {verdict} it" in table.note and "run alone" in intro
    missed = scaling_blocks(record | {"exponents": exp | {"new": record["target_exponent"] + 0.01}})[3].note
    assert "the new path misses it" in missed
