"""Hand-made cases for the ICDAR 2015 / FUNSD scoring protocol (no models, no data, no Tesseract needed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from replications.ocr.engines import split_words
from replications.ppocrv3.data import read_ic15_gt
from replications.ppocrv3.protocol import (
    Counts,
    Regions,
    exact_text_match,
    greedy_match,
    iou_matrix,
    rrc_text_match,
    score_image,
    summarise,
    to_polygon,
)


def box(x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], float)


GT = Regions([box(0, 0, 100, 20), box(0, 50, 60, 70), box(200, 0, 260, 30)], ["Hello", "world", "###"])


def score(det: Regions, gt: Regions = GT, rule=rrc_text_match) -> dict[str, float]:
    return summarise(score_image(gt, det, rule))


def test_perfect_prediction_scores_one():
    m = score(Regions([box(0, 0, 100, 20), box(0, 50, 60, 70)], ["Hello", "world"]))
    for k in ("test_det_precision", "test_det_recall", "test_det_hmean", "test_e2e_hmean"):
        assert m[k] == pytest.approx(100.0)
    assert m["test_cer"] == 0.0


def test_shifted_boxes_score_zero():
    # Shifted by 60% of their width: IoU = 0.4/1.6 = 0.25 < 0.5, so nothing matches.
    m = score(Regions([box(60, 0, 160, 20), box(36, 50, 96, 70)], ["Hello", "world"]))
    assert m["test_det_hmean"] == 0.0 and m["test_e2e_hmean"] == 0.0
    assert math.isnan(m["test_cer"])  # no matched word: CER is undefined, not 0


def test_iou_threshold_is_strict_half():
    # det covers gt plus exactly as much again: IoU = 0.5 exactly -> RRC's ">" rejects it.
    gt = Regions([box(0, 0, 10, 10)], ["abc"])
    assert score(Regions([box(0, 0, 20, 10)], ["abc"]), gt)["test_det_hmean"] == 0.0
    assert score(Regions([box(0, 0, 19.9, 10)], ["abc"]), gt)["test_det_hmean"] == pytest.approx(100.0)


def test_dont_care_regions_are_ignored():
    # A detection on the "###" region is neither a false positive nor a match; missing "###" costs no recall.
    m = score(Regions([box(0, 0, 100, 20), box(0, 50, 60, 70), box(200, 0, 260, 30)], ["Hello", "world", "x"]))
    assert m["test_det_precision"] == pytest.approx(100.0) and m["test_det_recall"] == pytest.approx(100.0)
    c = score_image(GT, Regions([box(201, 1, 259, 29)], ["x"]), rrc_text_match)
    assert (c.gt_care, c.det_care, c.det_matched) == (2, 0, 0)


def test_false_positive_lowers_precision_only():
    m = score(Regions([box(0, 0, 100, 20), box(0, 50, 60, 70), box(400, 400, 450, 420)], ["Hello", "world", "zz"]))
    assert m["test_det_recall"] == pytest.approx(100.0)
    assert m["test_det_precision"] == pytest.approx(200 / 3)
    assert m["test_det_hmean"] == pytest.approx(80.0)


def test_wrong_transcription_fails_end_to_end_only():
    m = score(Regions([box(0, 0, 100, 20), box(0, 50, 60, 70)], ["Hello", "wor1d"]))
    assert m["test_det_hmean"] == pytest.approx(100.0)
    assert m["test_e2e_recall"] == pytest.approx(50.0) and m["test_e2e_precision"] == pytest.approx(50.0)
    assert m["test_cer"] == pytest.approx(100 * 1 / 10)  # one substitution over 10 ground-truth characters


def test_one_to_one_matching():
    # Two detections on one word: only one may match; the other is a false positive.
    gt = Regions([box(0, 0, 100, 20)], ["abc"])
    c = score_image(gt, Regions([box(0, 0, 100, 20), box(1, 0, 100, 20)], ["abc", "abc"]), rrc_text_match)
    assert (c.det_matched, c.e2e_matched, c.det_care) == (1, 1, 2)


def test_greedy_order_follows_rrc():
    iou = np.array([[0.9, 0.8], [0.7, 0.0]])
    assert greedy_match(iou, [False, False], [False, False]) == [(0, 0)]
    assert greedy_match(iou, [True, False], [False, False]) == [(1, 0)]


def test_iou_matrix_values():
    m = iou_matrix([to_polygon(box(0, 0, 10, 10))], [to_polygon(box(5, 0, 15, 10)), to_polygon(box(50, 50, 60, 60))])
    assert m[0, 0] == pytest.approx(50 / 150) and m[0, 1] == 0.0


def test_self_intersecting_quad_is_repaired():
    bowtie = np.array([[0, 0], [10, 10], [10, 0], [0, 10]], float)
    assert to_polygon(bowtie).is_valid


def test_rrc_transcription_rule():
    assert rrc_text_match("Hello", "HELLO")  # case-insensitive
    assert rrc_text_match("(Hello)", "hello") and rrc_text_match("Hello!", "Hello") and rrc_text_match("'Tis", "tis")
    assert not rrc_text_match("Hello", "Hello!")  # only the ground truth may lose a special character
    assert not rrc_text_match("Hello", "Hell0") and not rrc_text_match("", "")


def test_exact_rule_is_case_sensitive():
    assert exact_text_match("Date:", " Date: ") and exact_text_match("ﬁle", "file")  # NFKC folds the ligature
    assert not exact_text_match("Date:", "DATE:") and not exact_text_match("Date:", "Date")


def test_counts_add_up_across_images():
    a = score_image(GT, Regions([box(0, 0, 100, 20)], ["Hello"]), rrc_text_match)
    b = score_image(GT, Regions([], []), rrc_text_match)
    total = Counts()
    total += a
    total += b
    assert (total.gt_care, total.det_care, total.det_matched) == (4, 1, 1)
    assert summarise(total)["test_det_recall"] == pytest.approx(25.0)


def test_regions_reject_mismatched_lengths():
    with pytest.raises(ValueError, match="transcriptions"):
        Regions([box(0, 0, 1, 1)], [])


def test_ic15_gt_parsing_keeps_commas_and_strips_bom():
    polys, texts = read_ic15_gt("\ufeff1,2,3,4,5,6,7,8,a,b\r\n9,9,9,9,9,9,9,9,###\r\n")
    assert texts == ["a,b", "###"] and polys[0] == [1, 2, 3, 4, 5, 6, 7, 8]


def test_split_words_uses_character_boxes():
    chars = [box(10 * i, 0, 10 * i + 8, 20).tolist() for i in range(7)]  # "ab cdef" -> 7 boxes, one per char
    quads, words = split_words("ab cdef", chars, box(0, 0, 70, 20))
    assert words == ["ab", "cdef"]
    np.testing.assert_allclose(quads[0], box(0, 0, 18, 20))
    np.testing.assert_allclose(quads[1], box(30, 0, 68, 20))


def test_split_words_falls_back_to_proportional_cut():
    quads, words = split_words("ab cd", [], box(0, 0, 50, 10))
    assert words == ["ab", "cd"]
    np.testing.assert_allclose(quads[1], box(30, 0, 50, 10))
