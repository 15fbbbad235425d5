"""SE-GNN's semantic-evidence metrics of each test query (Li et al., AAAI 2022), recomputed from the training graph.

As the authors define them (renli1024/SE-GNN @ 1996bd3 ``drawing/data_analyse.py``: ``compute_semantic_metrics``,
``count_ent_path``, ``compute_ent_simlarity``), for a tail query (h, r, ?) with answer t (a head query (?, r, t)
with answer h mirrors it):

* ``M_rt`` (relation level): how often r co-occurs with the answer in training, #{h' : (h', r, t) in train}
  (head query: #{t' : (h, r, t') in train}).
* ``M_ht`` (entity level): the number of directed walks of length 1 or 2 in the training graph from the known
  entity to the answer, multi-edges counted (h -> t; head query: t -> h): A[h, t] + (A @ A)[h, t].
* ``M_hrt`` (triple level): the summed similarity between the answer and the other training answers of the same
  query, sim(a, b) = the number of training (h, r) groups and (r, t) groups of at most 25 entities holding both.

Sparse-matrix products instead of the official per-query Python loops; tests/test_rep_evidence.py checks every
value against the shipped ``data2metrics`` (WN18RR; FB15k-237 where the mirror holds it) and a hand-made graph.
These belong to the SE-GNN package once it exists; they live here because REP's base models are what they rank.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

MAX_GROUP = 25  # compute_ent_simlarity: max_size, groups with more members are skipped
MODES = ("tail-batch", "head-batch")


def _adjacency(train: np.ndarray, n: int) -> sp.csr_matrix:
    return sp.csr_matrix((np.ones(len(train)), (train[:, 0], train[:, 2])), shape=(n, n))


def _groups(train: np.ndarray, n_rel: int, n: int) -> tuple[sp.csr_matrix, sp.csr_matrix, dict, dict]:
    """0/1 matrices (h, r) -> tails and (r, t) -> heads, rows indexed by the dicts returned."""
    mats, index = [], []
    for key_cols, member in (((0, 1), 2), ((1, 2), 0)):
        if key_cols == (0, 1):
            keys = train[:, 0].astype(np.int64) * n_rel + train[:, 1]
        else:
            keys = train[:, 1].astype(np.int64) * n + train[:, 2]
        uniq, row = np.unique(keys, return_inverse=True)
        m = sp.csr_matrix((np.ones(len(train)), (row, train[:, member])), shape=(len(uniq), n))
        m.data[:] = 1.0  # a set per group, as read_data's pos_tails / pos_heads
        m.sum_duplicates()
        m.data[:] = 1.0
        mats.append(m)
        index.append({int(k): i for i, k in enumerate(uniq)})
    return mats[0], mats[1], index[0], index[1]


def similarity(tails_of: sp.csr_matrix, heads_of: sp.csr_matrix) -> sp.csr_matrix:
    """sim(a, b) for a != b: shared groups of at most MAX_GROUP members (symmetric, zero diagonal)."""
    total = None
    for groups in (tails_of, heads_of):
        sizes = np.asarray(groups.sum(1)).ravel()
        small = groups[np.flatnonzero(sizes <= MAX_GROUP)]
        co = (small.T @ small).tocsr()
        total = co if total is None else total + co
    total.setdiag(0)
    total.eliminate_zeros()
    return total


def _rowwise(a: sp.csr_matrix, b: sp.csr_matrix) -> np.ndarray:
    return np.asarray(a.multiply(b).sum(1)).ravel()


def evidence(train: torch.Tensor, test: torch.Tensor, num_entities: int, num_relations: int
             ) -> dict[tuple[int, int, int, str], dict[str, int]]:
    """(h, r, t, mode) -> {M_rt, M_ht, M_hrt} for every distinct test triple and both modes."""
    tr = train.numpy().astype(np.int64)
    te = np.unique(test.numpy().astype(np.int64), axis=0)  # read_data keeps sets of answers
    n = num_entities
    adj = _adjacency(tr, n)
    adj2 = (adj @ adj).tocsr()
    walks = (adj + adj2).tocsr()
    tails_of, heads_of, hr_index, rt_index = _groups(tr, num_relations, n)
    sim = similarity(tails_of, heads_of)
    empty = sp.csr_matrix((1, n))
    out: dict[tuple[int, int, int, str], dict[str, int]] = {}
    h, r, t = te[:, 0], te[:, 1], te[:, 2]
    for mode in MODES:
        if mode == "tail-batch":
            known, answer = h, t
            rows = [hr_index.get(int(a) * num_relations + int(b)) for a, b in zip(h, r)]
            same_answer = [rt_index.get(int(b) * n + int(c)) for b, c in zip(r, t)]
            answers_of, cooc_of = tails_of, heads_of
        else:
            known, answer = t, h
            rows = [rt_index.get(int(b) * n + int(c)) for b, c in zip(r, t)]
            same_answer = [hr_index.get(int(a) * num_relations + int(b)) for a, b in zip(h, r)]
            answers_of, cooc_of = heads_of, tails_of
        m_rt = np.array([0 if i is None else cooc_of.indptr[i + 1] - cooc_of.indptr[i] for i in same_answer])
        m_ht = np.asarray(walks[known, answer]).ravel()
        others = sp.vstack([empty if i is None else answers_of[i] for i in rows]).tocsr()
        m_hrt = _rowwise(sim[answer], others)
        for k in range(len(te)):
            out[(int(h[k]), int(r[k]), int(t[k]), mode)] = {
                "M_rt": int(m_rt[k]), "M_ht": int(round(m_ht[k])), "M_hrt": int(round(m_hrt[k]))}
    return out
