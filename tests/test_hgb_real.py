"""The HGB loader on the real mirrored files: statistics from each dataset's PROVENANCE.md."""

from __future__ import annotations

import pytest

from shared.data.hgb import load_hgb
from tests.conftest import needs_mirror


@pytest.fixture(scope="module", autouse=True)
def _cache(module_cache):
    return module_cache


@needs_mirror
@pytest.mark.parametrize(
    "name,nodes,train,test,classes,multilabel",
    [("dblp", 26128, 1217, 2840, 4, False), ("imdb", 21420, 1371, 3202, 5, True), ("aminer", 55783, 1969, 4595, 4, False)],
)
def test_hgb_statistics(name, nodes, train, test, classes, multilabel):
    data = load_hgb(name)
    assert sum(data[t].num_nodes for t in data.node_types) == nodes
    target = data[data.target_type]
    assert int(target.train_mask.sum()) == train and int(target.test_mask.sum()) == test
    assert data.num_classes == classes and data.multilabel == multilabel
    assert not bool((target.train_mask & target.test_mask).any()), "train and test labels must not overlap"


@needs_mirror
def test_dblp_edges_and_features():
    data = load_hgb("dblp")
    assert sum(data[e].edge_index.shape[1] for e in data.edge_types) == 239566  # link.dat lines
    assert data["1"].x.shape == (14328, 4231) and "x" not in data["3"]  # venues carry no features
