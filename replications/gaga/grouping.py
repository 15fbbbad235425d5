"""GAGA's group aggregation (Sec. 4.2) with sparse algebra instead of the official per-node loop.

For relation r, hop k and target v, N_r^k(v) is the set of nodes reachable from v in k steps over
A_r + I (self-loops added, so "within distance <= k"), as the official `_sample_multi_hop_neighbors`
builds it with full fanouts. N_r^k(v) is split into three groups (official `_group_aggregation`):
train nodes labelled 0 (excluding v), train nodes labelled 1 (excluding v), and the rest (val/test/
unlabelled nodes and v itself). Each group contributes the mean of its raw features (zeros if empty).

Sparse form, per block of rows: B = binarise(A1[rows] @ A1 ...) (k factors), sums = B @ [X*m_g | m_g];
then v is moved from its own train group to "other", which is exact because v is always in N^k(v).
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


def _block_means(a1: sp.csr_matrix, xg: np.ndarray, groups: np.ndarray, x: np.ndarray,
                 rows: slice, hops: int, dense_above: float) -> np.ndarray:
    """(b, hops, 3, F) group means for the nodes in `rows`."""
    n, f = x.shape
    reach = a1[rows]
    ids = np.arange(rows.start, rows.stop)
    out = np.empty((len(ids), hops, N_GROUPS, f), dtype=np.float32)
    for k in range(hops):
        if k > 0:
            reach = reach @ a1  # path counts; only reachability matters, so binarise
            reach.data[:] = 1.0
        if reach.nnz > dense_above * reach.shape[0] * n:
            sums = reach.toarray() @ xg  # dense BLAS beats sparse @ dense once 2-hop sets are large
        else:
            sums = np.asarray(reach @ xg)
        feat, cnt = sums[:, : N_GROUPS * f].reshape(-1, N_GROUPS, f), sums[:, N_GROUPS * f:]
        # v sits in its own neighbourhood (self-loop); the official code puts it in OTHER.
        own = groups[ids]
        moved = own != OTHER
        r = np.nonzero(moved)[0]
        feat[r, own[moved]] -= x[ids[moved]]
        cnt[r, own[moved]] -= 1.0
        feat[r, OTHER] += x[ids[moved]]
        cnt[r, OTHER] += 1.0
        cnt = np.rint(cnt)  # counts are exact integers; remove float noise before the test below
        with np.errstate(invalid="ignore", divide="ignore"):
            out[:, k] = np.where(cnt[..., None] > 0, feat / cnt[..., None], 0.0)
    return out


def relation_sequences(adj: sp.spmatrix, x: np.ndarray, groups: np.ndarray, hops: int = 2,
                       block: int = 512, workers: int = 1, dense_above: float = 0.02) -> np.ndarray:
    """(N, 1 + hops*3, F) token sequence of one relation: [x_v, h^1_-, h^1_+, h^1_*, h^2_-, ...]."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    n, f = x.shape
    if adj.shape != (n, n) or groups.shape != (n,):
        raise ValueError(f"shapes disagree: adj {adj.shape}, x {x.shape}, groups {groups.shape}")
    a1 = with_self_loops(adj)
    masks = np.stack([groups == g for g in range(N_GROUPS)], axis=1).astype(np.float32)  # (N, 3)
    xg = np.concatenate([x * masks[:, g:g + 1] for g in range(N_GROUPS)] + [masks], axis=1)
    seq = np.empty((n, 1 + hops * N_GROUPS, f), dtype=np.float32)
    seq[:, 0] = x

    def work(start: int) -> None:
        rows = slice(start, min(start + block, n))
        seq[rows, 1:] = _block_means(a1, xg, groups, x, rows, hops, dense_above).reshape(-1, hops * N_GROUPS, f)

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
