"""SE-GNN's semantic-evidence metrics: a hand-made graph worked out below, and equality with the shipped data2metrics."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from replications.rep.evidence import MAX_GROUP, _groups, evidence, similarity
from shared import safe_pickle
from tests.conftest import needs_mirror

# (h, r, t). Groups: (h, r) -> tails {(0,0): {1,2}, (0,1): {1,4}, (1,1): {3}, (2,1): {3}, (4,0): {2}, (5,1): {3,4}};
# (r, t) -> heads {(0,1): {0}, (1,1): {0}, (0,2): {0,4}, (1,3): {1,2,5}, (1,4): {0,5}}.
TRAIN = torch.tensor([(0, 0, 1), (0, 1, 1), (0, 0, 2), (1, 1, 3), (2, 1, 3), (4, 0, 2), (0, 1, 4), (5, 1, 3), (5, 1, 4)])


def test_hand_made_graph() -> None:
    out = evidence(TRAIN, torch.tensor([(0, 1, 3)]), 6, 2)
    # Tail query (0, 1, ?) -> 3. M_rt: heads of (r=1, t=3) = {1, 2, 5} -> 3. M_ht: walks 0 -> 3 of length <= 2:
    # 0 -r0-> 1 -> 3, 0 -r1-> 1 -> 3 (the multi-edge counts twice), 0 -> 2 -> 3 -> 3. M_hrt: other answers of (0, 1)
    # are {1, 4}; sim(3, 1) = 0, sim(3, 4) = 1 (group (5, 1) holds both) -> 1.
    assert out[(0, 1, 3, "tail-batch")] == {"M_rt": 3, "M_ht": 3, "M_hrt": 1}
    # Head query (?, 1, 3) -> 0. M_rt: tails of (h=0, r=1) = {1, 4} -> 2. M_ht: walks 3 -> 0: 3 has no out-edge -> 0.
    # M_hrt: other answers {1, 2, 5}; only sim(0, 5) = 1 (group (r=1, t=4) holds 0 and 5) -> 1.
    assert out[(0, 1, 3, "head-batch")] == {"M_rt": 2, "M_ht": 0, "M_hrt": 1}


def test_groups_above_the_size_cap_are_ignored() -> None:
    n = MAX_GROUP + 3
    big = torch.tensor([(0, 0, t) for t in range(1, MAX_GROUP + 2)])  # (0, 0) has 26 tails: skipped
    small = torch.tensor([(0, 1, 1), (0, 1, 2)])
    for train, expected in ((big, 0.0), (torch.cat([big, small]), 1.0)):
        tails_of, heads_of, _, _ = _groups(train.numpy(), 2, n)
        assert similarity(tails_of, heads_of)[1, 2] == expected


ARTIFACTS = Path(os.environ.get("REPLICATIONS_MIRROR", "")) / "SE-GNN-artifacts"


@needs_mirror
@pytest.mark.parametrize("dataset, folder", [
    ("wn18rr", "WN18RR"),
    pytest.param("fb15k_237", "FB15k_237", marks=pytest.mark.slow),
])
def test_equal_to_the_shipped_data2metrics(dataset: str, folder: str) -> None:
    from replications.rep.data import load

    kg = load(dataset)
    ours = evidence(kg.train, kg.test, kg.num_entities, kg.num_relations)
    theirs = safe_pickle.load(ARTIFACTS / folder / "data2metrics")
    assert ours.keys() == theirs.keys()  # same entity/relation ids: both number by first appearance
    assert all(ours[k] == theirs[k] for k in theirs)
