"""PicoDet decoding (DFL + NMS) on planted head outputs, and the released CDLA model when it is in the store."""

from __future__ import annotations

import numpy as np
import pytest

from replications.ppstructurev2 import layout


def test_centres_cover_a_partial_last_row_like_the_head():
    c = layout.centers((800, 608), 64)
    assert len(c) == 13 * 10 == 130  # 800/64 = 12.5 -> 13 rows, 608/64 = 9.5 -> 10 columns
    assert c[0].tolist() == [32, 32] and c[1].tolist() == [96, 32] and c[10].tolist() == [32, 96]  # row-major


def test_dfl_distance_is_the_expected_bin_times_stride():
    logits = np.full((1, 32), -50.0)
    for side, b in enumerate([2, 0, 7, 3]):
        logits[0, side * 8 + b] = 50.0  # a one-hot distribution per side
    assert layout.dfl_distances(logits, 16)[0].tolist() == pytest.approx([32, 0, 112, 48])
    logits[0, :8] = 0.0  # uniform over bins 0..7: expectation 3.5
    assert layout.dfl_distances(logits, 8)[0, 0] == pytest.approx(28)


def test_nms_suppresses_overlaps_above_the_threshold_only():
    boxes = np.array([[0, 0, 10, 10], [1, 0, 11, 10], [20, 20, 30, 30], [0, 0, 10, 6]], float)
    keep = layout.hard_nms(boxes, np.array([0.9, 0.8, 0.7, 0.6]), 0.5)
    assert keep.tolist() == [0, 2]  # boxes 1 and 3 overlap box 0 by IoU 0.82 and 0.6
    keep = layout.hard_nms(boxes, np.array([0.9, 0.8, 0.7, 0.6]), 0.65)
    assert keep.tolist() == [0, 2, 3]


def planted(input_hw, classes=2, bins=8):
    """Head outputs with one confident class-1 box at the stride-8 cell (row 5, col 3), sides (2, 1, 3, 4) bins."""
    outs_s, outs_d = [], []
    for s in layout.STRIDES:
        n = len(layout.centers(input_hw, s))
        outs_s.append(np.zeros((1, n, classes), np.float32))
        outs_d.append(np.full((1, n, 4 * bins), -50.0, np.float32))
    w = int(np.ceil(input_hw[1] / 8))
    k = 5 * w + 3
    outs_s[0][0, k, 1] = 0.95
    for side, b in enumerate([2, 1, 3, 4]):
        outs_d[0][0, k, side * bins + b] = 50.0
    return outs_s + outs_d


def test_decode_recovers_a_planted_box_in_page_pixels():
    dets = layout.decode(planted((80, 64)), (80, 64), (160, 256), ["a", "b"], 0.5, 0.5)
    assert len(dets) == 1 and dets[0].label == "b" and dets[0].score == pytest.approx(0.95)
    cx, cy = 3.5 * 8, 5.5 * 8  # centre in input pixels; sides 2,1,3,4 bins of 8 px
    expect = np.array([cx - 16, cy - 8, cx + 24, cy + 32]) * [4, 2, 4, 2]  # page 160x256 from input 80x64
    assert np.asarray(dets[0].box) == pytest.approx(expect)


def test_decode_refuses_outputs_that_do_not_fit_the_input_size():
    with pytest.raises(ValueError, match="predictions for"):
        layout.decode(planted((80, 64)), (96, 64), (96, 64), ["a", "b"], 0.5, 0.5)


@pytest.mark.slow
def test_released_cdla_model_matches_the_fact_sheet_architecture():
    from replications.ocr import models

    if not models.available("layout_cdla"):
        pytest.skip("layout_cdla.onnx is not in the store (python -m replications.ocr.models)")
    a = layout.architecture(models.model_path("layout_cdla"))
    assert a["input_hw"] == [800, 608] and a["fpn_levels"] == 4 and a["cells_per_level"] == [7600, 1900, 475, 130]
    assert a["reg_max"] == 7 and a["classes"] == 10 and a["se_blocks"] == 2 and a["hardswish"] > 50
