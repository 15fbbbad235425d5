"""Baselines under PSHGCN's protocol, built from torch_geometric: RGCN and HGT (full batch)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn
from torch_geometric.data import HeteroData
from torch_geometric.nn import HeteroConv, HGTConv, RGCNConv, SAGEConv

from replications.pshgcn.model import TypeProjection


def _in_dims(data: HeteroData) -> dict[str, int | None]:
    return {t: (data[t].x.shape[1] if "x" in data[t] else None) for t in data.node_types}


class RGCN(nn.Module):
    """R-GCN (Schlichtkrull et al. 2018) on the graph with every HGB link type as a relation."""

    def __init__(self, data: HeteroData, hidden: int, layers: int, dropout: float, num_bases: int | None) -> None:
        super().__init__()
        self.project = TypeProjection(_in_dims(data), {t: data[t].num_nodes for t in data.node_types}, hidden)
        self.types = list(data.node_types)
        self.offsets, n = {}, 0
        for t in self.types:
            self.offsets[t], n = n, n + data[t].num_nodes
        edge_index, edge_type = [], []
        for i, (s, _, d) in enumerate(data.edge_types):
            e = data[s, _, d].edge_index
            edge_index.append(torch.stack([e[0] + self.offsets[s], e[1] + self.offsets[d]]))
            edge_type.append(torch.full((e.shape[1],), i))
        # PyG messages flow source -> target; HGB lists both directions, so every relation is covered.
        self.register_buffer("edge_index", torch.cat(edge_index, 1), persistent=False)
        self.register_buffer("edge_type", torch.cat(edge_type), persistent=False)
        r = len(data.edge_types)
        self.convs = nn.ModuleList(RGCNConv(hidden, hidden, r, num_bases=num_bases) for _ in range(layers))
        self.out = nn.Linear(hidden, data.num_classes)
        self.dropout = nn.Dropout(dropout)
        self.target = data.target_type
        self.target_slice = slice(self.offsets[self.target], self.offsets[self.target] + data[self.target].num_nodes)

    def forward(self, x: dict[str, Tensor], _adjs=None) -> Tensor:
        projected = self.project(x)
        h = torch.cat([projected[t] for t in self.types])
        for conv in self.convs:
            h = torch.relu(conv(self.dropout(h), self.edge_index, self.edge_type))
        return self.out(self.dropout(h[self.target_slice]))


class HeteroDictGNN(nn.Module):
    """Typed projection -> layers of a heterogeneous conv on per-type feature dicts -> linear classifier."""

    def __init__(self, data: HeteroData, hidden: int, layers: int, dropout: float,
                 make_conv: Callable[[], nn.Module]) -> None:
        super().__init__()
        self.project = TypeProjection(_in_dims(data), {t: data[t].num_nodes for t in data.node_types}, hidden)
        self.convs = nn.ModuleList(make_conv() for _ in range(layers))
        self.edge_index = {et: data[et].edge_index for et in data.edge_types}
        self.out = nn.Linear(hidden, data.num_classes)
        self.dropout = nn.Dropout(dropout)
        self.target = data.target_type

    def forward(self, x: dict[str, Tensor], _adjs=None) -> Tensor:
        h = {t: self.dropout(v) for t, v in self.project(x).items()}
        for conv in self.convs:
            h = {t: self.dropout(torch.relu(v)) for t, v in conv(h, self.edge_index).items()}
        return self.out(h[self.target])


class HGT(HeteroDictGNN):
    """Heterogeneous Graph Transformer (Hu et al. 2020), PyG's HGTConv."""

    def __init__(self, data: HeteroData, hidden: int, layers: int, heads: int, dropout: float) -> None:
        super().__init__(data, hidden, layers, dropout, lambda: HGTConv(hidden, hidden, data.metadata(), heads=heads))


class RSAGE(HeteroDictGNN):
    """Relational GraphSAGE: one SAGEConv (mean aggregation) per edge type, summed per node type (HeteroConv)."""

    def __init__(self, data: HeteroData, hidden: int, layers: int, dropout: float) -> None:
        super().__init__(data, hidden, layers, dropout,
                         lambda: HeteroConv({et: SAGEConv(hidden, hidden) for et in data.edge_types}, aggr="sum"))
