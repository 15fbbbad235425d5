"""The official HGB node-classification protocol (hgb/main.py), shared by PSHGCN and its baselines.

Full-batch training with AdamW; after every step an evaluation pass; early stopping on validation
loss (patience 100, max 1000 epochs); the reported test score is the one at the lowest validation
loss, which we obtain by restoring the parameters of that epoch before ``evaluate``.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from shared.metrics import f1_micro_macro, multilabel_threshold, multilabel_topk_by_true_count
from shared.progress import bar as progress_bar


@dataclass
class Split:
    train: Tensor
    val: Tensor
    test: Tensor


def split_for_seed(train_mask: Tensor, test_mask: Tensor, val_ratio: float) -> Split:
    """processing.py: shuffle label.dat's nodes with numpy's seeded RNG; the first 20% validate."""
    train_idx = np.nonzero(train_mask.numpy())[0]
    np.random.shuffle(train_idx)
    cut = int(train_idx.shape[0] * val_ratio)
    val, train = np.sort(train_idx[:cut]), np.sort(train_idx[cut:])
    return Split(torch.from_numpy(train), torch.from_numpy(val), torch.from_numpy(np.nonzero(test_mask.numpy())[0]))


def loss_fn(multilabel: bool):
    return F.binary_cross_entropy_with_logits if multilabel else F.cross_entropy


def scores(logits: Tensor, y: Tensor, multilabel: bool) -> dict[str, float]:
    """Micro/Macro-F1 in percent. Multi-label: the official top-k rule, and HGB's logit>0 rule."""
    if not multilabel:
        micro, macro = f1_micro_macro(y, logits.argmax(1))
        return {"micro_f1": 100 * micro, "macro_f1": 100 * macro}
    micro, macro = f1_micro_macro(y, multilabel_topk_by_true_count(logits, y))
    t_micro, t_macro = f1_micro_macro(y, multilabel_threshold(logits))
    return {"micro_f1": 100 * micro, "macro_f1": 100 * macro,
            "micro_f1_hgb_threshold": 100 * t_micro, "macro_f1_hgb_threshold": 100 * t_macro}


def param_groups(model: nn.Module, lr: float, wd: float, prop_lr: float | None, prop_wd: float | None):
    """PSHGCN's polynomial coefficients get their own lr/wd (main.py); every other weight the common one."""
    poly = [p for n, p in model.named_parameters() if n.startswith("filter.")]
    rest = [p for n, p in model.named_parameters() if not n.startswith("filter.")]
    groups = [{"params": rest, "lr": lr, "weight_decay": wd}]
    if poly:
        groups.append({"params": poly, "lr": prop_lr, "weight_decay": prop_wd})
    return groups


def fit(model: nn.Module, inputs: tuple, y: Tensor, split: Split, multilabel: bool, optimizer,
        max_epochs: int, patience: int, dropout_first_epoch_only: bool, log) -> dict:
    """Returns the best epoch's summary; the model is left holding that epoch's parameters.

    Epoch e (official numbering) = one optimiser step, then the validation loss of the new weights.
    With the official dropout quirk the model is in eval mode from epoch 1 on, so the next training
    forward pass *is* that evaluation: we reuse its logits instead of running the graph twice.
    """
    loss = loss_fn(multilabel)
    best = {"val_loss": float("inf"), "epoch": -1, "state": None}
    since_best = 0

    def record(out: Tensor, epoch: int, train_loss: float) -> bool:
        nonlocal best, since_best
        val_loss = float(loss(out[split.val], y[split.val]).detach())
        if val_loss < best["val_loss"]:
            best = {"val_loss": val_loss, "epoch": epoch, "state": copy.deepcopy(model.state_dict())}
            since_best = 0
        else:
            since_best += 1
        log({"train/loss": train_loss, "val/loss": val_loss}, epoch)
        bar.set_postfix(train=f"{train_loss:.3f}", val=f"{val_loss:.3f}", best=best["epoch"])
        return since_best == patience

    def evaluate_now() -> Tensor:
        model.eval()
        with torch.no_grad():
            return model(*inputs)

    bar = progress_bar(range(max_epochs), desc="epochs")
    train_loss, stopped, epoch = float("nan"), False, 0
    started = time.perf_counter()
    for epoch in bar:
        reuse = dropout_first_epoch_only and epoch > 0
        model.train(not reuse)
        out = model(*inputs)
        if reuse and record(out, epoch - 1, train_loss):  # logits of the weights after epoch-1's step
            stopped, epoch = True, epoch - 1
            break
        step_loss = loss(out[split.train], y[split.train])
        optimizer.zero_grad()
        step_loss.backward()
        optimizer.step()
        train_loss = float(step_loss.detach())
        if not reuse and not dropout_first_epoch_only and record(evaluate_now(), epoch, train_loss):
            stopped = True
            break
    if not stopped and dropout_first_epoch_only:
        record(evaluate_now(), epoch, train_loss)  # the last step's weights still need their evaluation
    model.load_state_dict(best["state"])
    seconds = time.perf_counter() - started
    return {"best_epoch": best["epoch"], "best_val_loss": best["val_loss"], "epochs_run": epoch + 1,
            "seconds_per_epoch": round(seconds / (epoch + 1), 4)}
