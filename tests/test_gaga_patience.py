"""Early stopping counts optimizer steps, so a full-batch baseline is not stopped after a few updates.

The bug this pins: with patience counted in epochs, 30 epochs of full-batch GraphSAGE were 30 Adam steps, and
on 3 of 10 Tolokers splits it stopped at epoch 0, before its validation AUC recovered from an early dip.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

from replications.gaga import REPLICATION
from replications.gaga.train import fit, steps_per_epoch
from shared.seeding import seed_everything
from tests.runs import run_of

sys.path.insert(0, str(Path(__file__).parent))
from test_gaga_learning import cfg_for, planted_graph  # noqa: E402


class LateLearner(nn.Module):
    """Scripted scorer: its ranking depends only on how many optimizer steps it has taken.

    After 1 step it ranks moderately well, for steps 2..`dip` it ranks worse than chance, afterwards nearly
    perfectly: a planted version of GraphSAGE's early dip on Tolokers. Its one parameter gets no gradient.
    """

    def __init__(self, y: torch.Tensor, dip: int, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.signal, self.noise = y.float(), 0.5 * torch.randn(len(y), generator=g)
        self.w = nn.Parameter(torch.zeros(()))
        self.dip, self.steps = dip, 0

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        if self.training:  # fit() calls forward once per optimizer step in train mode
            self.steps += 1
        gain = 0.5 if self.steps <= 1 else (-1.0 if self.steps <= self.dip else 2.0)
        score = gain * self.signal[idx] + self.noise[idx] + 0.0 * self.w
        return torch.stack([torch.zeros_like(score), score], dim=1)


def planted(n: int = 400, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = torch.from_numpy((rng.random(n) < 0.3).astype(np.int64))
    perm = torch.from_numpy(rng.permutation(n))
    return y, perm[: n // 2], perm[n // 2:]


def run(dip: int, patience_steps: int, batch_size: int | None, max_steps: int = 400) -> dict:
    y, train_idx, val_idx = planted()
    model = LateLearner(y, dip)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    return fit(lambda idx: model(idx), model, y, train_idx, val_idx, opt, max_steps=max_steps,
               patience_steps=patience_steps, batch_size=batch_size, log=lambda m, s: None)


def test_steps_per_epoch():
    assert steps_per_epoch(5879, 256) == 23  # Tolokers train split at GAGA's batch size
    assert steps_per_epoch(5879, None) == 1  # full batch
    assert steps_per_epoch(512, 256) == 2


def test_full_batch_model_outlasts_an_early_dip():
    # 30 full-batch "epochs" = 30 steps: stops at its first epoch, the collapse seen on Tolokers
    short = run(dip=40, patience_steps=30, batch_size=None)
    assert short["best_epoch"] == 0 and short["epochs_run"] == 31 and short["best_val_auc"] < 0.9
    # patience in optimizer steps (30 epochs of batches of 8 over 200 train nodes = 750 steps): it recovers
    full = run(dip=40, patience_steps=30 * steps_per_epoch(200, 8), batch_size=None, max_steps=2000)
    assert full["best_epoch"] >= 40 and full["best_val_auc"] > 0.95


def test_patience_is_the_same_number_of_steps_for_any_batch_size():
    # no gain after the dip ends: each run stops exactly `patience_steps` optimizer steps after its best epoch
    for batch_size, per_epoch in ((None, 1), (50, 4), (8, 25)):
        out = run(dip=0, patience_steps=100, batch_size=batch_size)
        assert out["steps_run"] - out["best_step"] == 100, (batch_size, out)
        assert out["epochs_run"] == out["best_epoch"] + 1 + 100 // per_epoch


def test_budget_is_counted_in_steps():
    out = run(dip=0, patience_steps=10_000, batch_size=50, max_steps=40)  # 4 steps per epoch
    assert out["epochs_run"] == 10 and out["steps_run"] == 40
    out = run(dip=0, patience_steps=10_000, batch_size=None, max_steps=40)
    assert out["epochs_run"] == 40 and out["steps_run"] == 40


def test_replication_gives_full_batch_graphsage_patience_in_steps():
    """Through REPLICATION.train: patience 3 at step_batch 16 over 300 train nodes = 3 x 19 = 57 steps."""
    run = run_of(cfg_for("gaga_graphsage", "scale.patience=3", "scale.max_epochs=null", "paper.protocol.step_batch=16",
                         "paper.protocol.max_epochs=4"))
    graph = planted_graph(n=600)
    data = REPLICATION.prepare(run, graph)
    seed_everything(0)
    net = REPLICATION.build_model(run, data)
    summary = REPLICATION.train(run, net, data, 0, lambda m, s: None)
    assert summary["max_epochs"] == 4 * 19  # the 4-epoch budget, in full-batch steps
    assert summary["steps_run"] == summary["epochs_run"]  # full batch: one step per epoch
    assert summary["steps_run"] - summary["best_step"] >= 57 or summary["epochs_run"] == 4 * 19, summary
