"""One training loop for GAGA and the baselines: Adam, cross-entropy, early stopping on validation AUC
(official EarlyStopper: keep the best-val-AUC weights, stop after `patience` epochs without a gain).

Patience and the epoch budget are counted in optimizer steps, so that a full-batch model (one step per
epoch) gets as many updates without a gain as a mini-batch one: the official `patience` epochs at GAGA's
batch size (`steps_per_epoch`). Counted in epochs, 30 epochs of GraphSAGE were 30 Adam steps and it
stopped at its first epoch on 3 of 10 Tolokers splits. For mini-batch training at that batch size the
rule is the official one, step for step."""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from replications.gaga.metrics import fraud_scores, roc_auc
from shared import progress
from shared.replication import LogFn

Forward = Callable[[torch.Tensor], torch.Tensor]  # node ids -> logits (B, 2)


def steps_per_epoch(n_train: int, batch_size: int | None) -> int:
    """Optimizer steps in one pass over `n_train` nodes (the last batch may be short; None: full batch)."""
    return -(-n_train // batch_size) if batch_size else 1


def fit(forward: Forward, model: nn.Module, y: torch.Tensor, train_idx: torch.Tensor, val_idx: torch.Tensor,
        optimizer: torch.optim.Optimizer, max_steps: int, patience_steps: int, batch_size: int | None,
        log: LogFn, class_weight: torch.Tensor | None = None, max_epochs: int | None = None) -> dict:
    """`batch_size` None: one full-batch step per epoch (GNN baselines); else shuffled mini-batches
    over the train nodes without under-sampling, as the official DataLoader(shuffle=True).

    Validation after every epoch; stop once `patience_steps` optimizer steps have passed since the best
    validation AUC, or when the next epoch would pass `max_steps` (or `max_epochs`, a cap for short runs)."""
    loss_fn = nn.CrossEntropyLoss(weight=class_weight)
    y_val = y[val_idx].cpu().numpy()
    per_epoch = steps_per_epoch(len(train_idx), batch_size)
    max_epochs = min(max(1, max_steps // per_epoch), max_steps if max_epochs is None else max_epochs)
    best_auc, best_epoch, best_state, epoch = -np.inf, -1, None, -1
    steps, best_steps = 0, 0
    for epoch in progress.bar(range(max_epochs), desc="epochs", unit="epoch"):  # closes on early stop too
        model.train()
        order = train_idx[torch.randperm(len(train_idx))] if batch_size else train_idx
        step = batch_size or len(order)
        total = 0.0
        for start in range(0, len(order), step):
            batch = order[start:start + step]
            loss = loss_fn(forward(batch), y[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            steps += 1
            total += float(loss.detach()) * len(batch)
        val_auc = roc_auc(y_val, predict(forward, model, val_idx))
        # Logged in percent, the unit of evaluate()'s val_auc/test_auc and of the paper; early stopping and
        # the stored best_val_auc keep the fraction roc_auc returns (stored records are unchanged).
        log({"train_loss": total / len(order), "val_auc": 100 * val_auc}, epoch)
        if val_auc > best_auc:
            best_auc, best_epoch, best_steps = val_auc, epoch, steps
            best_state = copy.deepcopy(model.state_dict())
        elif steps - best_steps >= patience_steps:
            break
    if best_state is not None:
        model.load_state_dict(best_state)
    return {"best_epoch": best_epoch, "epochs_run": epoch + 1, "best_val_auc": float(best_auc),
            "best_step": best_steps, "steps_run": steps, "max_epochs": max_epochs}


@torch.no_grad()
def predict(forward: Forward, model: nn.Module, idx: torch.Tensor, chunk: int = 8192) -> np.ndarray:
    model.eval()
    return np.concatenate([fraud_scores(forward(idx[i:i + chunk])) for i in range(0, len(idx), chunk)])
