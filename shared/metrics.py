"""Metrics shared by the papers. Inputs are numpy/torch arrays; outputs are plain floats in [0, 1]."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.metrics import f1_score


def _np(a: np.ndarray | torch.Tensor) -> np.ndarray:
    return a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)


def f1_micro_macro(y_true, y_pred) -> tuple[float, float]:
    """Micro- and macro-F1 of class predictions, or of multi-hot predictions (multi-label)."""
    y_true, y_pred = _np(y_true), _np(y_pred)
    return (
        float(f1_score(y_true, y_pred, average="micro", zero_division=0)),
        float(f1_score(y_true, y_pred, average="macro", zero_division=0)),
    )


def multilabel_topk_by_true_count(scores, y_true) -> np.ndarray:
    """Multi-hot prediction picking, per node, as many top-scoring labels as it truly has.

    This is how PSHGCN's official hgb/utils.py scores IMDB. It reads the true label count at test
    time, so it is not the HGB standard (``multilabel_threshold``). A node with no true label gets
    every label, as numpy's ``argsort()[-0:]`` does in the official code.
    """
    scores, y_true = _np(scores), _np(y_true)
    pred = np.zeros(scores.shape, dtype=np.int64)
    order = np.argsort(scores, axis=1, kind="stable")
    for i, k in enumerate(y_true.sum(axis=1).astype(int)):
        pred[i, order[i, -k:] if k > 0 else order[i]] = 1
    return pred


def multilabel_threshold(logits, threshold: float = 0.0) -> np.ndarray:
    """HGB's standard multi-label rule: a label is predicted where its logit exceeds 0."""
    return (_np(logits) > threshold).astype(np.int64)
