"""PSHGCN's view of a heterogeneous graph: row-normalised relation matrices and the words over them.

A relation is named by two node-type letters, source then destination (``AP``: author -> paper).
``P_r = D_r^{-1} A_r`` is stored as a sparse (n_src x n_dst) block, so ``P_r @ x[dst]`` gives each
source node the mean of its neighbours (official hgb/processing.py, there as N x N matrices).
"""

from __future__ import annotations

import warnings

import torch
from omegaconf import DictConfig
from torch_geometric.data import HeteroData

warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")

Word = tuple[str, ...]  # ("AP", "PT") stands for P_AP @ P_PT


class SparseMatrix(torch.autograd.Function):
    """y = A @ x for a constant sparse A, with A^T precomputed so backward needs no transpose or sort."""

    @staticmethod
    def forward(ctx, a: torch.Tensor, a_t: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        ctx.a_t = a_t
        return torch.sparse.mm(a, x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return None, None, torch.sparse.mm(ctx.a_t, grad)


def relation_matrices(data: HeteroData, model_cfg: DictConfig) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """name -> (P_r, P_r^T) as CSR tensors (faster than COO for sparse @ dense on CPU, measured)."""
    letters = {k: str(v) for k, v in model_cfg.node_letters.items()}
    by_rel = {rel: (s, d) for s, rel, d in data.edge_types}
    adjs = {}
    for name, parts in model_cfg.relations.items():
        src_type, dst_type = letters[name[0]], letters[name[1]]
        n_src, n_dst = data[src_type].num_nodes, data[dst_type].num_nodes
        edges = []
        for rel in map(str, parts):
            if by_rel.get(rel) != (src_type, dst_type):
                raise ValueError(f"relation {name}: edge type {rel} joins {by_rel.get(rel)}, not {src_type}->{dst_type}")
            edges.append(data[src_type, rel, dst_type].edge_index)
        if name in model_cfg.self_loops:
            edges.append(torch.arange(n_src).repeat(2, 1))
        index = torch.cat(edges, dim=1)
        # Binary adjacency (duplicate edges collapse), then divide each row by its degree.
        index = torch.sparse_coo_tensor(index, torch.ones(index.shape[1]), (n_src, n_dst), check_invariants=False)
        index = index.coalesce().indices()
        deg = torch.bincount(index[0], minlength=n_src).float()
        values = 1.0 / deg.clamp(min=1)[index[0]]
        adj = torch.sparse_coo_tensor(index, values, (n_src, n_dst), is_coalesced=True, check_invariants=False)
        adjs[name] = (adj.to_sparse_csr(), adj.t().coalesce().to_sparse_csr())
    return adjs


def enumerate_words(relations: list[str], order: int) -> list[Word]:
    """All relation chains of length 1..order, in processing.py's order (one coefficient each)."""
    layers = [[(r,) for r in relations]]
    for _ in range(order - 1):
        layers.append([w + (r,) for w in layers[-1] for r in relations if w[-1][1] == r[0]])
    return [w for layer in layers for w in layer]


def transpose_word(word: Word) -> Word:
    """w = r1 r2 ... rk  ->  w* = rk^-1 ... r1^-1, each relation replaced by its reverse type."""
    return tuple(r[::-1] for r in reversed(word))
