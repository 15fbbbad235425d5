"""PSHGCN: the positive noncommutative polynomial filter h(P)^* h(P) over relation matrices.

Matches the official hgb/model.py: per-type projection -> input dropout -> Linear+ReLU ->
row standardisation -> dropout -> h(P) then h(P)^* with one shared coefficient vector -> Linear.
Featureless node types get a learned row per node, which equals the official Linear on identity
features. Only the target type's rows of the second pass are computed: the other rows never
reach the loss, so outputs and gradients are unchanged.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor, nn

from replications.pshgcn.graph import Word, transpose_word


class TypeProjection(nn.Module):
    """Per node type: Linear(in_dim -> dim, no bias) on features, or one learned row per node."""

    def __init__(self, in_dims: dict[str, int | None], num_nodes: dict[str, int], dim: int) -> None:
        super().__init__()
        self.lins = nn.ModuleDict(
            {t: nn.Linear(d if d else num_nodes[t], dim, bias=False) for t, d in in_dims.items()}
        )
        self.featureless = {t for t, d in in_dims.items() if not d}

    def forward(self, x: dict[str, Tensor]) -> dict[str, Tensor]:
        # eye(n) @ W^T == W^T: same function and initialisation as the official one-hot features.
        return {t: lin.weight.t() if t in self.featureless else lin(x[t]) for t, lin in self.lins.items()}


class PolynomialFilter(nn.Module):
    """h(P) X = theta_0 X + sum_w theta_w P_w X, with memoised suffixes (one sparse matmul per word)."""

    def __init__(self, words: list[Word]) -> None:
        super().__init__()
        self.words = words
        n = len(words) + 1
        bound = math.sqrt(3.0 / n)  # official init_coe: uniform, then L1-normalised
        theta = np.random.uniform(-bound, bound, n)
        self.theta = nn.Parameter(torch.tensor(theta / np.abs(theta).sum(), dtype=torch.float32))

    def apply(self, x: dict[str, Tensor], adjs: dict[str, Tensor], src_of: dict[str, str],
              words: list[Word], out_types: set[str]) -> dict[str, Tensor]:
        cache: dict[Word, Tensor] = {}

        def term(word: Word) -> Tensor:
            if word not in cache:
                inner = x[src_of[word[0][1]]] if len(word) == 1 else term(word[1:])
                cache[word] = torch.sparse.mm(adjs[word[0]], inner)
            return cache[word]

        out = {t: self.theta[0] * x[t] for t in out_types}
        for i, word in enumerate(words, start=1):
            t = src_of[word[0][0]]
            if t in out_types:
                out[t] = out[t] + self.theta[i] * term(word)
        return out


class PSHGCN(nn.Module):
    def __init__(self, in_dims: dict[str, int | None], num_nodes: dict[str, int], num_classes: int,
                 words: list[Word], letters: dict[str, str], target: str, emb_dim: int, hidden: int,
                 input_drop: float, dropout: float) -> None:
        super().__init__()
        self.project = TypeProjection(in_dims, num_nodes, emb_dim)
        self.lin1 = nn.Linear(emb_dim, hidden)
        self.lin2 = nn.Linear(hidden, num_classes)
        self.filter = PolynomialFilter(words)
        self.words, self.words_t = words, [transpose_word(w) for w in words]
        self.src_of = dict(letters)  # letter -> node type
        self.target = target
        self.input_drop, self.dropout = nn.Dropout(input_drop), nn.Dropout(dropout)

    @staticmethod
    def standardise(x: Tensor) -> Tensor:
        x = (x - x.mean(1, keepdim=True)) / x.std(1, keepdim=True)
        return torch.nan_to_num(x, nan=0.0)

    def forward(self, x: dict[str, Tensor], adjs: dict[str, Tensor]) -> Tensor:
        h = {t: self.dropout(self.standardise(torch.relu(self.lin1(self.input_drop(v)))))
             for t, v in self.project(x).items()}
        every_type = set(h)
        h = self.filter.apply(h, adjs, self.src_of, self.words, every_type)  # h(P)
        h = self.filter.apply(h, adjs, self.src_of, self.words_t, {self.target})  # h(P)^*
        return self.lin2(h[self.target])
