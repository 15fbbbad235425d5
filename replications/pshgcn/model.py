"""PSHGCN: the positive noncommutative polynomial filter h(P)^* h(P) over relation matrices.

Matches the official hgb/model.py: per-type projection -> input dropout -> Linear+ReLU ->
row standardisation -> dropout -> h(P) then h(P)^* with one shared coefficient vector -> Linear.
Featureless node types get a learned row per node, which equals the official Linear on identity
features. Only the target type's rows of the second pass are kept: the other rows never reach
the loss, so outputs and gradients are unchanged.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor, nn

from replications.pshgcn.graph import SparseMatrix, Word, enumerate_words, transpose_word


class TypeProjection(nn.Module):
    """Per node type: Linear(in_dim -> dim, no bias) on features, or one learned row per node."""

    def __init__(self, in_dims: dict[str, int | None], num_nodes: dict[str, int], dim: int) -> None:
        super().__init__()
        self.lins = nn.ModuleDict(
            {t: nn.Linear(d if d else num_nodes[t], dim, bias=False) for t, d in in_dims.items()}
        )
        self.featureless = {t for t, d in in_dims.items() if not d}

    def forward(self, x: dict[str, Tensor | tuple[Tensor, Tensor]]) -> dict[str, Tensor]:
        out = {}
        for t, lin in self.lins.items():
            if t in self.featureless:  # eye(n) @ W^T == W^T: the official one-hot features, without eye(n)
                # Contiguous, like the official product: dropout fills its mask in memory order, so a
                # transposed view would draw other masks than the official seed does.
                out[t] = lin.weight.t().contiguous()
            elif isinstance(x[t], tuple):  # sparse bag-of-words features as (X, X^T): same product, far cheaper
                out[t] = SparseMatrix.apply(*x[t], lin.weight.t()).contiguous()
            else:
                out[t] = lin(x[t])
        return out


class PolynomialFilter(nn.Module):
    """h(P) X = theta_0 X + sum_w theta_w P_w X over all relation chains w of length 1..K.

    Computed level by level: the level-k terms that start with relation r are P_r applied to every
    level-(k-1) term starting at r's destination type. Terms travel in blocks of chains stacked side
    by side (up to BLOCK_COLUMNS columns), so one sparse matmul serves several words without ever
    re-copying a whole level. Coefficients follow the official word order (``enumerate_words``); the
    transposed pass gives chain c the coefficient of its transpose.
    """

    def __init__(self, relations: list[str], order: int) -> None:
        super().__init__()
        words = enumerate_words(relations, order)
        index = {w: i + 1 for i, w in enumerate(words)}
        n = len(words) + 1
        bound = math.sqrt(3.0 / n)  # official init_coe: uniform, then L1-normalised
        theta = np.random.uniform(-bound, bound, n)
        # float64, as the official nn.Parameter(torch.tensor(numpy array)) is: AdamW then updates it in double
        # precision, while each product theta_w * (P_w X) still runs in the activations' float32.
        self.theta = nn.Parameter(torch.tensor(theta / np.abs(theta).sum()))
        self.num_words, self.order = len(words), order
        self.from_letter: dict[str, list[str]] = {}
        for r in relations:
            self.from_letter.setdefault(r[0], []).append(r)
        # chains[k][s]: the level-k chains starting at letter s, in the order the stacked tensors hold them.
        chains: list[dict[str, list[Word]]] = [{s: [()] for s in {r[i] for r in relations for i in (0, 1)}}]
        for _ in range(order):
            chains.append({s: [(r, *w) for r in rs for w in chains[-1].get(r[1], [])]
                           for s, rs in self.from_letter.items()})
        self.chains = chains
        for k in range(1, order + 1):
            for s, ws in chains[k].items():
                self.register_buffer(f"idx_{k}_{s}", torch.tensor([index[w] for w in ws]), persistent=False)
                self.register_buffer(f"idx_t_{k}_{s}", torch.tensor([index[transpose_word(w)] for w in ws]),
                                     persistent=False)

    def forward(self, x: dict[str, Tensor], adjs: dict[str, tuple[Tensor, Tensor]], transposed: bool,
                out_letters: set[str]) -> dict[str, Tensor]:
        """x and the result are keyed by node-type letter; only ``out_letters`` are returned."""
        hidden = next(iter(x.values())).shape[1]
        per_block = max(1, BLOCK_COLUMNS // hidden)  # chains side by side in one sparse matmul
        out = {s: self.theta[0] * x[s] for s in out_letters}
        prev = {s: [v.unsqueeze(1)] for s, v in x.items()}  # level 0: one block holding the empty chain
        for k in range(1, self.order + 1):
            cur = {}
            for s, rels in self.from_letter.items():
                if k == self.order and s not in out_letters:
                    continue  # the final level only matters where it is read
                blocks = [
                    SparseMatrix.apply(*adjs[r], b.reshape(b.shape[0], -1)).view(-1, b.shape[1], hidden)
                    for r in rels if r[1] in prev for b in prev[r[1]]
                ]
                if not blocks:
                    continue
                cur[s] = _merge(blocks, per_block)
                if s in out_letters:
                    coef = self.theta[getattr(self, f"idx_{'t_' if transposed else ''}{k}_{s}")]
                    terms = (term for b in cur[s] for term in b.unbind(1))  # chains in stacking order
                    for j, term in enumerate(terms):
                        out[s] = torch.addcmul(out[s], term, coef[j])
            prev = cur
        return out


BLOCK_COLUMNS = 1024  # wide enough to amortise a sparse matmul, narrow enough to keep rows in cache


def _merge(blocks: list[Tensor], per_block: int) -> list[Tensor]:
    """Concatenate consecutive (n, m, h) blocks while they hold at most `per_block` chains together."""
    merged, pending = [], []
    for b in blocks:
        if pending and sum(p.shape[1] for p in pending) + b.shape[1] > per_block:
            merged.append(pending[0] if len(pending) == 1 else torch.cat(pending, 1))
            pending = []
        pending.append(b)
    merged.append(pending[0] if len(pending) == 1 else torch.cat(pending, 1))
    return merged


class PSHGCN(nn.Module):
    def __init__(self, in_dims: dict[str, int | None], num_nodes: dict[str, int], num_classes: int,
                 relations: list[str], order: int, letters: dict[str, str], target: str, emb_dim: int,
                 hidden: int, input_drop: float, dropout: float) -> None:
        super().__init__()
        self.project = TypeProjection(in_dims, num_nodes, emb_dim)
        self.lin1 = nn.Linear(emb_dim, hidden)
        self.lin2 = nn.Linear(hidden, num_classes)
        self.filter = PolynomialFilter(relations, order)
        self.letter_of = {t: s for s, t in letters.items()}  # node type -> letter
        self.target = self.letter_of[target]
        self.input_drop, self.dropout = nn.Dropout(input_drop), nn.Dropout(dropout)

    @staticmethod
    def standardise(x: Tensor) -> Tensor:
        x = (x - x.mean(1, keepdim=True)) / x.std(1, keepdim=True)
        return torch.nan_to_num(x, nan=0.0)

    def forward(self, x: dict[str, Tensor], adjs: dict[str, Tensor]) -> Tensor:
        # As the official forward: input dropout per type (node-type order), then one tensor over all types
        # for lin1 -> ReLU -> standardise -> dropout. Drawing the dropout mask on the concatenated tensor,
        # not type by type, is what makes our seed s draw the official seed s's masks.
        projected = self.project(x)
        stacked = torch.cat([self.input_drop(v) for v in projected.values()], 0)
        stacked = self.dropout(self.standardise(torch.relu(self.lin1(stacked))))
        parts = stacked.split([v.shape[0] for v in projected.values()], 0)
        h = {self.letter_of[t]: part for t, part in zip(projected, parts)}
        h = self.filter(h, adjs, transposed=False, out_letters=set(h))  # h(P) X
        h = self.filter(h, adjs, transposed=True, out_letters={self.target})  # h(P)^* h(P) X
        return self.lin2(h[self.target])
