"""GAGA's evaluation: sigmoid score, step-wise AP, F1 threshold chosen on validation only; BWGNN filters."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics import auc, precision_recall_curve

from replications.gaga.baselines import beta_wavelet_thetas
from replications.gaga.metrics import best_f1_threshold, evaluate_split, f1_macro, fraud_scores


def test_score_is_sigmoid_of_fraud_logit_not_softmax():
    s = fraud_scores(torch.tensor([[1.0, 2.0]]))
    assert s[0] == pytest.approx(1 / (1 + np.exp(-2.0)))  # 0.881; softmax would give 0.731


def test_ap_is_step_wise_not_trapezoidal():
    y = np.array([1, 0, 1, 0, 0, 1])
    s = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
    out = evaluate_split(y, s, y, s)
    # by hand: hits at ranks 1, 3, 6 -> AP = (1 + 2/3 + 3/6) / 3
    assert out["test_ap"] == pytest.approx(100 * (1 + 2 / 3 + 0.5) / 3)
    p, r, _ = precision_recall_curve(y, s)
    assert abs(out["test_ap"] - 100 * auc(r, p)) > 1.0  # the trapezoidal AUPRC differs


def test_threshold_is_chosen_on_validation_only():
    y_val = np.array([0, 0, 1, 1])
    s_val = np.array([0.1, 0.2, 0.6, 0.7])
    assert best_f1_threshold(y_val, s_val) == pytest.approx(0.6)  # the first threshold with F1 = 1
    y_test = np.array([0, 1, 1, 0])
    a = evaluate_split(y_val, s_val, y_test, np.array([0.5, 0.65, 0.9, 0.55]))
    # test scores that would favour another threshold do not move it: 0.6 applied -> preds 0,1,1,0
    assert a["test_f1_macro"] == pytest.approx(100.0)
    b = evaluate_split(y_val, s_val, y_test, np.array([0.5, 0.59, 0.9, 0.55]))
    assert b["test_f1_macro"] == pytest.approx(100 * f1_macro(y_test, np.array([0.5, 0.59, 0.9, 0.55]), 0.6))
    assert b["test_f1_macro"] < 100.0


def test_beta_wavelet_coefficients_by_hand():
    # order 2: 3(1 - L/2)^2, 6(L/2)(1 - L/2), 3(L/2)^2, expanded in powers of L
    np.testing.assert_allclose(beta_wavelet_thetas(2), [[3, -3, 0.75], [0, 3, -1.5], [0, 0, 0.75]], atol=1e-12)
