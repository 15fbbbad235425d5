"""Our seed s is the official seed s: the RNG draws follow hgb/main.py's order (split, then init, then dropout).

The reference below replays the official order by hand: set_seed(s) -> np.random.shuffle of label.dat's
training nodes -> nn.Linear per node type (type order), lin1, lin2 -> theta = np.random.uniform (float64)
-> first training forward: input dropout per type, then one dropout mask over all types concatenated.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from omegaconf import OmegaConf
from torch import nn
from torch_geometric.data import HeteroData

from replications.pshgcn import REPLICATION
from replications.pshgcn.graph import enumerate_words, relation_matrices
from replications.pshgcn.model import PSHGCN
from shared.seeding import seed_everything
from tests.runs import run_of

EMB, HIDDEN, CLASSES, N0, N1 = 4, 6, 3, 10, 7


def _toy() -> tuple[HeteroData, dict]:
    g = torch.Generator().manual_seed(0)
    data = HeteroData()
    data["0"].num_nodes, data["1"].num_nodes = N0, N1
    data["0"].x = torch.randn(N0, 5, generator=g)  # type 0 has features, type 1 is featureless
    src, dst = torch.randint(0, N0, (25,), generator=g), torch.randint(0, N1, (25,), generator=g)
    data["0", "0", "1"].edge_index = torch.stack([src, dst])
    data["1", "1", "0"].edge_index = torch.stack([dst, src])
    data["0"].y = torch.randint(0, CLASSES, (N0,), generator=g)
    data["0"].train_mask = torch.tensor([True] * 8 + [False] * 2)
    data["0"].test_mask = ~data["0"].train_mask
    data.target_type, data.num_classes, data.multilabel = "0", CLASSES, False
    cfg = OmegaConf.create({
        "device": "cpu", "paper": {"protocol": {"val_ratio": 0.25}},
        "model": {"name": "pshgcn", "K": 2, "emb_dim": EMB, "hidden": HIDDEN, "input_drop": 0.5, "dropout": 0.5,
                  "node_letters": {"A": "0", "B": "1"}, "relations": {"AB": ["0"], "BA": ["1"]}, "self_loops": []},
    })
    adjs = relation_matrices(data, cfg.model)
    return {"graph": data, "adjs": adjs, "x": {"0": data["0"].x}}, cfg


def _official_order(seed: int, data: dict) -> dict:
    """What the official code draws for `seed`, in its order."""
    seed_everything(seed)
    train_idx = np.nonzero(data["graph"]["0"].train_mask.numpy())[0]
    np.random.shuffle(train_idx)  # processing.py, before the model exists
    cut = int(train_idx.shape[0] * 0.25)
    lins = [nn.Linear(5, EMB, bias=False), nn.Linear(N1, EMB, bias=False)]  # feat_project, type order
    lin1, lin2 = nn.Linear(EMB, HIDDEN), nn.Linear(HIDDEN, CLASSES)
    n = len(enumerate_words(["AB", "BA"], 2)) + 1
    bound = np.sqrt(3.0 / n)
    theta = np.random.uniform(-bound, bound, n)
    # First training forward, up to the filter's input.
    feats = [data["graph"]["0"].x, torch.eye(N1)]
    parts = [F.dropout(lin(f), 0.5, training=True) for lin, f in zip(lins, feats)]
    h = F.relu(lin1(torch.cat(parts, 0)))
    h = torch.nan_to_num((h - h.mean(1, keepdim=True)) / h.std(1, keepdim=True))
    h = F.dropout(h, 0.5, training=True)
    return {"val": np.sort(train_idx[:cut]), "train": np.sort(train_idx[cut:]), "lins": lins, "lin1": lin1,
            "lin2": lin2, "theta": torch.tensor(theta / np.abs(theta).sum()), "filter_input": h}


@pytest.mark.parametrize("seed", [1, 2, 5])
def test_seed_draws_follow_the_official_order(seed):
    data, cfg = _toy()
    want = _official_order(seed, data)

    seed_everything(seed)
    built = REPLICATION.build_model(run_of(cfg), data)
    model = built.net
    assert isinstance(model, PSHGCN) and set(data) == {"graph", "adjs", "x"}  # the split travels with the model
    assert np.array_equal(built.split.val.numpy(), want["val"])
    assert np.array_equal(built.split.train.numpy(), want["train"])
    assert model.filter.theta.dtype == torch.float64 and torch.equal(model.filter.theta.detach(), want["theta"])
    assert torch.equal(model.project.lins["0"].weight, want["lins"][0].weight)
    assert torch.equal(model.project.lins["1"].weight, want["lins"][1].weight)
    assert torch.equal(model.lin1.weight, want["lin1"].weight) and torch.equal(model.lin2.bias, want["lin2"].bias)

    seen = {}
    model.filter.register_forward_pre_hook(lambda mod, args: None if "h" in seen else seen.update(h=args[0]))
    model.train()
    model(data["x"], data["adjs"])
    got = torch.cat([seen["h"]["A"], seen["h"]["B"]], 0)
    assert torch.allclose(got, want["filter_input"], atol=1e-6)
    # The same masks, not merely similar values: dropped entries coincide exactly.
    assert torch.equal(got == 0, want["filter_input"] == 0)


def test_different_seeds_draw_different_splits():
    data, cfg = _toy()
    splits = []
    for seed in (1, 2):
        seed_everything(seed)
        splits.append(REPLICATION.build_model(run_of(cfg), data).split.val.tolist())
    assert splits[0] != splits[1]


def test_train_and_evaluate_score_the_split_the_model_was_built_with():
    """No per-run state: evaluate needs only the model build_model returned (net + its split) and the summary."""
    data, cfg = _toy()
    cfg.scale = {"max_epochs": 3, "patience": 5}
    cfg.paper.protocol.update({"max_epochs": 3, "patience": 5, "dropout_first_epoch_only": True})
    cfg.model.update({"lr": 0.01, "wd": 0.0, "prop_lr": 0.01, "prop_wd": 0.0})
    run = run_of(cfg)
    seed_everything(1)
    built = REPLICATION.build_model(run, data)
    summary = REPLICATION.train(run, built, data, 1, lambda m, s: None)
    assert vars(REPLICATION) == {} and set(data) == {"graph", "adjs", "x"}
    assert summary["epochs_run"] == 3
    metrics = REPLICATION.evaluate(run, built, data, 1, summary)
    assert set(metrics) == {"val_micro_f1", "val_macro_f1", "test_micro_f1", "test_macro_f1"}
    # the validation score is the one of the split drawn in build_model (2 of the 8 label.dat nodes at 0.25)
    assert len(built.split.val) == 2 and metrics["val_micro_f1"] in (0.0, 50.0, 100.0)
    assert metrics == REPLICATION.evaluate(run, built, data, 1, summary)
