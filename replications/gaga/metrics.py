"""GAGA's evaluation (official utils/metrics.py): score = sigmoid(class-1 logit); AUC from roc_curve;
step-wise AP (average_precision_score, not trapezoidal AUPRC); F1-macro at the threshold that maximises
F1 on the VALIDATION precision-recall curve ("threshold moving"), then applied unchanged to test."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.metrics import auc, average_precision_score, f1_score, precision_recall_curve, roc_curve


def fraud_scores(logits: torch.Tensor) -> np.ndarray:
    """sigmoid of the fraud logit, as the official convert_probs does (not a softmax)."""
    return torch.sigmoid(logits[:, 1].detach().float()).cpu().numpy()


def roc_auc(y: np.ndarray, s: np.ndarray) -> float:
    fpr, tpr, _ = roc_curve(y, s)
    return float(auc(fpr, tpr))


def best_f1_threshold(y: np.ndarray, s: np.ndarray) -> float:
    """Threshold at the max-F1 point of the PR curve (official calc_ap_and_thres)."""
    precision, recall, thresholds = precision_recall_curve(y, s)
    # The curve's last point (P=1, R=0) has no threshold; drop it. 0/0 points count as F1 = 0.
    p, r = precision[:-1], recall[:-1]
    f1 = np.divide(2 * p * r, p + r, out=np.zeros_like(p), where=(p + r) > 0)
    return float(thresholds[int(np.argmax(f1))])


def f1_macro(y: np.ndarray, s: np.ndarray, threshold: float) -> float:
    return float(f1_score(y, (s >= threshold).astype(np.int64), average="macro", zero_division=0))


def evaluate_split(y_val: np.ndarray, s_val: np.ndarray, y_test: np.ndarray, s_test: np.ndarray) -> dict[str, float]:
    """val_/test_ auc, ap, f1_macro in percent; the F1 threshold comes from validation only."""
    thr = best_f1_threshold(y_val, s_val)
    out = {}
    for part, y, s in (("val", y_val, s_val), ("test", y_test, s_test)):
        out[f"{part}_auc"] = 100 * roc_auc(y, s)
        out[f"{part}_ap"] = 100 * float(average_precision_score(y, s))
        out[f"{part}_f1_macro"] = 100 * f1_macro(y, s, thr)
    out["threshold"] = thr
    return out
