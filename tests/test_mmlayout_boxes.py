"""Box normalisation (LayoutLM's 0-1000 frame) and the label-free line grouping."""

from __future__ import annotations

import numpy as np
import pytest

from replications.mmlayout.boxes import group_lines, normalise


def test_normalise_scales_orders_and_clips():
    assert normalise([80, 100, 160, 200], width=800, height=1000) == (100, 100, 200, 200)
    assert normalise([160, 200, 80, 100], width=800, height=1000) == (100, 100, 200, 200)  # corners swapped
    assert normalise([-5, 990, 820, 1010], width=800, height=1000) == (0, 990, 1000, 1000)  # off the page
    assert normalise([1, 1, 2, 2], width=3, height=3) == (333, 333, 667, 667)  # rounded, not truncated


def test_normalise_refuses_an_empty_page():
    with pytest.raises(ValueError, match="page size"):
        normalise([0, 0, 1, 1], width=0, height=1000)


def test_lines_join_neighbours_and_split_at_gaps_and_rows():
    boxes = np.array([
        [10, 10, 50, 30], [55, 12, 90, 31], [95, 10, 130, 29],  # one line: gaps 5 px < median height 20
        [400, 11, 450, 30],                                       # same row, 270 px away: its own unit
        [10, 60, 60, 80], [64, 61, 100, 79],                      # a second row below
        [12, 25, 40, 45],                                         # overlaps row 1 by 5 of 20 px (< 0.5): not joined
    ], dtype=float)
    assert group_lines(boxes, min_overlap=0.5, max_gap=1.0).tolist() == [0, 0, 0, 1, 2, 2, 3]
    # a wider gap threshold joins the far word; ids stay numbered by each line's first word
    assert group_lines(boxes, min_overlap=0.5, max_gap=20.0).tolist() == [0, 0, 0, 0, 1, 1, 2]


def test_lines_are_transitive_and_independent_of_word_order():
    boxes = np.array([[0, 0, 10, 10], [30, 0, 40, 10], [15, 0, 25, 10]], dtype=float)  # A .. C .. B
    assert group_lines(boxes, max_gap=1.0).tolist() == [0, 0, 0]  # A-B not adjacent, joined through C
    assert group_lines(np.zeros((0, 4))).tolist() == []
