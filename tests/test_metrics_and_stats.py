"""Metrics, aggregation and the reported-vs-reproduced comparison against hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from shared.metrics import f1_micro_macro, multilabel_threshold, multilabel_topk_by_true_count
from shared.reference import NO_REFERENCE, NOT_REPRODUCED, REPRODUCED, compare
from shared.stats import aggregate, percentile_interval, resample_indices, summarize


def test_f1_single_label_by_hand():
    micro, macro = f1_micro_macro([0, 0, 1, 1, 2], [0, 1, 1, 1, 2])
    assert micro == pytest.approx(4 / 5)
    # class 0: P=1, R=1/2 -> 2/3; class 1: P=2/3, R=1 -> 4/5; class 2: 1.
    assert macro == pytest.approx((2 / 3 + 4 / 5 + 1) / 3)


def test_f1_multilabel_by_hand():
    truth = np.array([[1, 0, 1], [0, 1, 0]])
    pred = np.array([[1, 1, 0], [0, 1, 0]])
    micro, macro = f1_micro_macro(truth, pred)
    # tp=2, fp=1, fn=1 -> micro 2/3; per label F1: 1, 2/3, 0.
    assert micro == pytest.approx(2 / 3) and macro == pytest.approx((1 + 2 / 3 + 0) / 3)


def test_topk_by_true_count_matches_official_rule():
    scores = np.array([[0.1, 0.9, 0.5], [0.3, 0.2, 0.1], [0.5, 0.4, 0.6]])
    truth = np.array([[1, 1, 0], [1, 0, 0], [0, 0, 0]])
    # row 0 picks its top-2 (labels 1, 2), row 1 its top-1 (label 0); a row with no true label gets
    # every label, as numpy's argsort()[-0:] does in the official code.
    assert multilabel_topk_by_true_count(scores, truth).tolist() == [[0, 1, 1], [1, 0, 0], [1, 1, 1]]


def test_threshold_rule():
    assert multilabel_threshold(np.array([[-0.1, 0.0, 2.0]])).tolist() == [[0, 0, 1]]


def test_summarize_by_hand():
    s = summarize([1.0, 2.0, 3.0])
    assert s["mean"] == 2.0 and s["n"] == 3
    assert s["std"] == pytest.approx(1.0)  # sample std: squares 1 + 0 + 1 over n - 1 = 2
    half = 4.302652729911275 / math.sqrt(3)  # t_{0.975, 2} * sd / sqrt(n), sd = 1
    assert s["ci95_low"] == pytest.approx(2 - half) and s["ci95_high"] == pytest.approx(2 + half)


def test_aggregate_std_is_the_sample_std_by_hand():
    # 2, 4, 4, 4, 5, 5, 7, 9: mean 5, squared deviations sum to 32 -> sample std sqrt(32 / 7) (ddof=1), not the
    # population std sqrt(32 / 8) = 2 that the HGB papers print.
    per_seed = [{"test_f1": v, "test_ppl": 10 * v} for v in (2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0)]
    agg = aggregate(per_seed)
    assert agg["test_f1"]["mean"] == 5.0 and agg["test_f1"]["n"] == 8
    assert agg["test_f1"]["std"] == pytest.approx(math.sqrt(32 / 7)) and agg["test_f1"]["std"] != pytest.approx(2.0)
    assert agg["test_ppl"]["std"] == pytest.approx(10 * math.sqrt(32 / 7))
    one = aggregate([{"test_f1": 3.0}])["test_f1"]  # one seed: no spread to estimate (std 0, CI undefined)
    assert one["std"] == 0.0 and math.isnan(one["ci95_low"])


def test_bootstrap_pieces_by_hand():
    assert percentile_interval(np.arange(101.0), 0.90) == pytest.approx((5.0, 95.0))  # 5th and 95th of 0..100
    idx = resample_indices(7, 500, seed=3)
    assert idx.shape == (500, 7) and idx.min() == 0 and idx.max() == 6
    assert (idx == resample_indices(7, 500, seed=3)).all() and not (idx == resample_indices(7, 500, seed=4)).all()


def test_compare_statuses():
    paper = {
        "reported": [
            {"kind": "paper", "dataset": "d", "model": "m", "metric": "a", "value": 90.0, "source": "T1", "verified": True},
            {"kind": "paper", "dataset": "d", "model": "m", "metric": "b", "value": 80.0, "source": "T1", "verified": False},
            {"kind": "paper", "dataset": "d", "model": "m", "metric": "c", "value": None, "source": "T1", "verified": False},
        ],
        "tolerances": {"a": 1.0, "b": 1.0, "c": 1.0},
    }
    agg = {k: summarize(v) for k, v in {"a": [89.5, 90.1], "b": [70.0, 71.0], "c": [5.0, 6.0]}.items()}
    rows = {r["metric"]: r for r in compare(paper, "d", "m", agg)}
    assert rows["a"]["status"] == REPRODUCED and rows["a"]["difference"] == pytest.approx(-0.2)
    assert rows["b"]["status"] == NOT_REPRODUCED and rows["b"]["source"] == "T1"
    assert rows["c"]["status"] == NO_REFERENCE and rows["c"]["reported"] is None
