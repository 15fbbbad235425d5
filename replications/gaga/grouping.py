"""GAGA's group aggregation (Sec. 4.2) with sparse algebra instead of the official per-node loop.

For relation r, hop k and target v, N_r^k(v) is the set of nodes reachable from v in k steps over
A_r + I (self-loops added, so "within distance <= k"), as the official `_sample_multi_hop_neighbors`
builds it with full fanouts. N_r^k(v) is split into three groups (official `_group_aggregation`):
train nodes labelled 0 (excluding v), train nodes labelled 1 (excluding v), and the rest (val/test/
unlabelled nodes and v itself). Each group contributes the mean of its raw features (zeros if empty).

Sparse form, per block of rows and per group g: R_k = reach of the rows within k hops (boolean CSR, so
products OR path counts together: duplicated paths count once, as in the official sets), and
sums_g = (R_{k-1} @ A1[:, g]) @ [X_g | 1] (R_0 = the rows themselves); then v is moved from its own train
group to "other", which is exact because v is always in N^k(v). Nothing n x n (or block x n) is ever dense:
the cost is the paths walked plus the 2-hop pairs found, linear in n at constant degree once 2-hop sets
stop saturating the graph.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

NEG, POS, OTHER = 0, 1, 2
N_GROUPS = 3  # n_classes + 1, as in the official code


def group_ids(labels: np.ndarray, train_idx: np.ndarray) -> np.ndarray:
    """Group of every node as seen from outside it: its label if it is a train node, else OTHER.

    Only train labels are read, so val/test labels cannot reach the sequences (tests check this).
    """
    groups = np.full(labels.shape[0], OTHER, dtype=np.int64)
    train_labels = labels[train_idx]
    if not np.isin(train_labels, (0, 1)).all():
        raise ValueError("train labels must be 0 or 1")
    groups[train_idx] = train_labels
    return groups


def with_self_loops(adj: sp.spmatrix) -> sp.csr_matrix:
    """Binary CSR of A + I (float32), the graph the official code walks (`--add_self_loop`)."""
    a = sp.csr_matrix(adj, dtype=np.float32, copy=True)
    if a.shape[0] != a.shape[1]:
        raise ValueError(f"adjacency must be square, got {a.shape}")
    a = (a + sp.identity(a.shape[0], dtype=np.float32, format="csr")).tocsr()
    a.data[:] = 1.0
    a.eliminate_zeros()
    return a


def _block_means(cols: list[sp.csr_matrix], a1: sp.csr_matrix, x1s: list[np.ndarray], groups: np.ndarray,
                 x: np.ndarray, rows: slice, hops: int) -> np.ndarray:
    """(b, hops, 3, F) group means for the nodes in `rows`.

    Sparse at every density (issue 42). The old path densified a block above 2 % two-hop density
    (`reach.toarray() @ x`: O(b * n) per block, O(n^2) in all); this one costs per path walked and per
    two-hop pair found. Measured with bench_grouping.py (one thread): level with the dense path on the
    small saturated graphs (2.9k-5.8k nodes at Tolokers' degree 88), ~15 % faster on Tolokers itself, and
    its time follows the two-hop pairs (27-33 ns per pair from 2.9k to 46k nodes). Boolean products beat
    float32/float64 ones with a binarise step; splitting A1's columns by group once makes the products
    @ [X_g | 1] do F+1 multiply-adds per pair, not 3(F+1). Sums accumulate in float64, so each mean is
    the exact mean rounded once to float32.
    """
    f = x.shape[1]
    ids = np.arange(rows.start, rows.stop)
    out = np.empty((len(ids), hops, N_GROUPS, f), dtype=np.float32)
    prev = None  # reach within k hops (boolean CSR, block x n); None: the rows themselves (k = 0)
    own = groups[ids]
    moved = own != OTHER
    r, g_own, x_own = np.nonzero(moved)[0], own[moved], x[ids[moved]]
    for k in range(hops):
        sums = np.stack([np.asarray((c[rows] if prev is None else prev @ c) @ x1)  # (b, F+1) float64
                         for c, x1 in zip(cols, x1s)], axis=1)
        # v sits in its own neighbourhood (self-loop); the official code puts it in OTHER.
        sums[r, g_own, :f] -= x_own
        sums[r, g_own, f] -= 1.0
        sums[r, OTHER, :f] += x_own
        sums[r, OTHER, f] += 1.0
        cnt = sums[..., f:]  # exact integers in float64
        with np.errstate(invalid="ignore", divide="ignore"):
            out[:, k] = np.where(cnt > 0, sums[..., :f] / cnt, 0.0)
        if k + 1 < hops:
            prev = a1[rows] if prev is None else prev @ a1
    return out


def relation_sequences(adj: sp.spmatrix, x: np.ndarray, groups: np.ndarray, hops: int = 2,
                       block: int = 512, workers: int = 1) -> np.ndarray:
    """(N, 1 + hops*3, F) token sequence of one relation: [x_v, h^1_-, h^1_+, h^1_*, h^2_-, ...]."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    n, f = x.shape
    if adj.shape != (n, n) or groups.shape != (n,):
        raise ValueError(f"shapes disagree: adj {adj.shape}, x {x.shape}, groups {groups.shape}")
    a1 = with_self_loops(adj).astype(bool)  # boolean products: reachability, not path counts
    members = [np.flatnonzero(groups == g) for g in range(N_GROUPS)]
    cols = [a1[:, m].tocsr() for m in members]  # A1 restricted to group g's columns
    x1 = np.concatenate([x, np.ones((n, 1), np.float32)], axis=1).astype(np.float64)  # [x_u | 1]
    x1s = [x1[m] for m in members]
    seq = np.empty((n, 1 + hops * N_GROUPS, f), dtype=np.float32)
    seq[:, 0] = x

    def work(start: int) -> None:
        rows = slice(start, min(start + block, n))
        seq[rows, 1:] = _block_means(cols, a1, x1s, groups, x, rows, hops).reshape(-1, hops * N_GROUPS, f)

    starts = range(0, n, block)
    if workers > 1:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(work, starts))
    else:
        for s in starts:
            work(s)
    return seq


def group_sequences(adjs: list[sp.spmatrix], x: np.ndarray, groups: np.ndarray, hops: int = 2,
                    block: int = 512, workers: int = 1) -> np.ndarray:
    """(N, R*(1 + hops*3), F): the relations' sequences concatenated, the official token order."""
    return np.concatenate([relation_sequences(a, x, groups, hops, block, workers) for a in adjs], axis=1)


def reference_sequences(adjs: list[sp.spmatrix], x: np.ndarray, groups: np.ndarray, hops: int = 2) -> np.ndarray:
    """Slow per-node transcription of the official loop; only for tests on small graphs."""
    n, f = x.shape
    out = []
    for adj in adjs:
        a1 = with_self_loops(adj)
        seq = np.zeros((n, 1 + hops * N_GROUPS, f), dtype=np.float64)
        for v in range(n):
            seq[v, 0] = x[v]
            frontier = {v}
            for k in range(hops):
                frontier = {int(u) for w in frontier for u in a1.indices[a1.indptr[w]:a1.indptr[w + 1]]}
                for g in range(N_GROUPS):
                    members = [u for u in frontier if (OTHER if u == v else groups[u]) == g]
                    if members:
                        seq[v, 1 + k * N_GROUPS + g] = x[members].mean(axis=0)
        out.append(seq)
    return np.concatenate(out, axis=1).astype(np.float32)
