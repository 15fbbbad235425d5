"""One training loop for GAGA and the baselines: Adam, cross-entropy, early stopping on validation AUC
(official EarlyStopper: keep the best-val-AUC weights, stop after `patience` epochs without a gain)."""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from replications.gaga.metrics import fraud_scores, roc_auc
from shared.replication import LogFn

Forward = Callable[[torch.Tensor], torch.Tensor]  # node ids -> logits (B, 2)


def fit(forward: Forward, model: nn.Module, y: torch.Tensor, train_idx: torch.Tensor, val_idx: torch.Tensor,
        optimizer: torch.optim.Optimizer, max_epochs: int, patience: int, batch_size: int | None,
        log: LogFn, class_weight: torch.Tensor | None = None) -> dict:
    """`batch_size` None: one full-batch step per epoch (GNN baselines); else shuffled mini-batches
    over the train nodes without under-sampling, as the official DataLoader(shuffle=True)."""
    loss_fn = nn.CrossEntropyLoss(weight=class_weight)
    y_val = y[val_idx].cpu().numpy()
    best_auc, best_epoch, best_state, epoch = -np.inf, -1, None, -1
    for epoch in range(max_epochs):
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
            total += float(loss.detach()) * len(batch)
        val_auc = roc_auc(y_val, predict(forward, model, val_idx))
        log({"train_loss": total / len(order), "val_auc": val_auc}, epoch)
        if val_auc > best_auc:
            best_auc, best_epoch, best_state = val_auc, epoch, copy.deepcopy(model.state_dict())
        elif epoch - best_epoch >= patience:
            break
    if best_state is not None:
        model.load_state_dict(best_state)
    return {"best_epoch": best_epoch, "epochs_run": epoch + 1, "best_val_auc": float(best_auc)}


@torch.no_grad()
def predict(forward: Forward, model: nn.Module, idx: torch.Tensor, chunk: int = 8192) -> np.ndarray:
    model.eval()
    return np.concatenate([fraud_scores(forward(idx[i:i + chunk])) for i in range(0, len(idx), chunk)])
