"""PSHGCN's filter against a dense, word-by-word reference; word counts against the official code."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from torch_geometric.data import HeteroData

from replications.pshgcn.graph import enumerate_words, relation_matrices, transpose_word
from replications.pshgcn.model import PolynomialFilter
from tests.conftest import compose_cfg


@pytest.mark.parametrize("dataset,expected", [("dblp", 126), ("acm", 380), ("imdb", 6), ("aminer", 46)])
def test_word_counts_match_official_code(dataset, expected):
    # Counts of processing.py's `lis` for each official config (fact sheet: 126 / 380 / 6 / 46).
    cfg = compose_cfg(f"dataset={dataset}")
    assert len(enumerate_words(list(cfg.model.relations), cfg.model.K)) == expected


def test_transpose_reverses_and_flips():
    assert transpose_word(("AP", "PT")) == ("TP", "PA")
    assert transpose_word(transpose_word(("AP", "PT", "TP"))) == ("AP", "PT", "TP")


def _toy_graph(seed: int = 0) -> tuple[HeteroData, OmegaConf]:
    g = torch.Generator().manual_seed(seed)
    data = HeteroData()
    data["0"].num_nodes, data["1"].num_nodes = 5, 7
    src, dst = torch.randint(0, 5, (20,), generator=g), torch.randint(0, 7, (20,), generator=g)
    data["0", "0", "1"].edge_index = torch.stack([src, dst])
    data["1", "1", "0"].edge_index = torch.stack([dst, src])
    cfg = OmegaConf.create({"node_letters": {"A": "0", "B": "1"}, "relations": {"AB": ["0"], "BA": ["1"]},
                            "self_loops": []})
    return data, cfg


def test_relation_matrices_are_row_stochastic_where_rows_have_edges():
    data, cfg = _toy_graph()
    for a, a_t in relation_matrices(data, cfg).values():
        dense = a.to_dense()
        sums = dense.sum(1)
        assert torch.allclose(sums[sums > 0], torch.ones_like(sums[sums > 0]))
        assert torch.equal(a_t.to_dense(), dense.t())


@pytest.mark.parametrize("block_columns", [4, 8, 1024])  # one chain per block, merged pairs, one block
def test_filter_equals_dense_reference_and_its_gradient(monkeypatch, block_columns):
    monkeypatch.setattr("replications.pshgcn.model.BLOCK_COLUMNS", block_columns)
    data, cfg = _toy_graph()
    adjs = relation_matrices(data, cfg)
    dense = {k: a.to_dense() for k, (a, _) in adjs.items()}
    np.random.seed(0)
    filt = PolynomialFilter(list(cfg.relations), order=3)
    words = enumerate_words(list(cfg.relations), 3)
    x = {"A": torch.randn(5, 4, dtype=torch.float32), "B": torch.randn(7, 4)}

    def reference(inp, transposed):
        out = {s: filt.theta[0] * v for s, v in inp.items()}
        for i, w in enumerate(words, start=1):
            chain = transpose_word(w) if transposed else w
            m = dense[chain[0]]
            for r in chain[1:]:
                m = m @ dense[r]
            out[chain[0][0]] = out[chain[0][0]] + filt.theta[i] * (m @ inp[chain[-1][1]])
        return out

    got = filt(filt(x, adjs, False, {"A", "B"}), adjs, True, {"A"})["A"]
    want = reference(reference(x, False), True)["A"]
    assert torch.allclose(got, want, atol=1e-5)
    (g1,) = torch.autograd.grad(got.square().sum(), filt.theta)
    (g2,) = torch.autograd.grad(want.square().sum(), filt.theta)
    assert torch.allclose(g1, g2, atol=1e-4)
