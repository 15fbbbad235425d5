"""SER / RE metrics on hand-computed cases and on FUNSD's ground truth as prediction; the TB-YX reading order."""

from __future__ import annotations

import os

import pytest

from replications.ppstructurev2 import kie


def test_ser_counts_an_entity_only_with_type_and_span_right():
    true = [["B-Q", "I-Q", "B-A", "O"], ["B-H"]]
    pred = [["B-Q", "I-Q", "B-Q", "O"], ["B-H"]]  # 2 of 3 entities right, 3 predicted
    s = kie.ser_scores(true, pred)
    assert s["precision"] == pytest.approx(200 / 3) and s["recall"] == pytest.approx(200 / 3)
    pred = [["B-Q", "B-Q", "B-A", "O"], ["O"]]  # Q split in two: 1 right (A) of 3 predicted, 3 true
    s = kie.ser_scores(true, pred)
    assert s["f1"] == pytest.approx(100 / 3)
    with pytest.raises(ValueError, match="tags"):
        kie.ser_scores([["O"]], [["O", "O"]])


def test_re_micro_f1_over_documents():
    true = [{(1, 2), (3, 4)}, {(5, 6)}]
    pred = [{(1, 2), (4, 3)}, {(5, 6), (7, 8)}]  # 2 right of 4 predicted, 3 true; a reversed link is wrong
    s = kie.re_scores(true, pred)
    assert s["precision"] == 50 and s["recall"] == pytest.approx(200 / 3)
    assert s["f1"] == pytest.approx(2 * 50 * (200 / 3) / (50 + 200 / 3))


def test_tb_yx_orders_a_row_with_jittered_tops_left_to_right():
    # two rows; within each, the right box sits 5 px higher than its left neighbour
    boxes = [[100, 50, 150, 60], [10, 55, 60, 65], [200, 45, 250, 55], [10, 100, 60, 110]]
    plain = sorted(range(4), key=lambda k: (boxes[k][1], boxes[k][0]))
    assert plain == [2, 0, 1, 3]  # a plain (y, x) sort reads the row right to left
    assert kie.tb_yx(boxes, official=False) == [1, 0, 2, 3]
    # PaddleOCR's loop never swaps the first two boxes after the sort: 2 stays before 0
    assert kie.tb_yx(boxes, official=True) == [2, 1, 0, 3]
    assert kie.tb_yx(boxes, th=3, official=False) == plain  # a 5 px jitter is beyond a 3 px band


@pytest.mark.skipif(not os.environ.get("REPLICATIONS_MIRROR"), reason="needs the FUNSD mirror")
def test_funsd_ground_truth_as_prediction_scores_100():
    from replications.ppstructurev2.data import load_funsd_forms

    forms = load_funsd_forms()
    assert len(forms) == 50
    tags = [kie.funsd_bio(f["entities"]) for f in forms]
    links = [kie.funsd_links(f["entities"]) for f in forms]
    assert kie.ser_scores(tags, tags)["f1"] == 100.0
    assert kie.re_scores(links, links)["f1"] == 100.0
    assert sum(len(x) for x in links) > 500  # FUNSD test: hundreds of question -> answer links
    dropped = [[("O" if t != "O" and i % 2 else t) for i, t in enumerate(doc)] for doc in tags]
    assert kie.ser_scores(tags, dropped)["f1"] < 100.0
