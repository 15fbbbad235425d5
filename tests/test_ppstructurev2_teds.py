"""TEDS against the PubTabNet authors' own scores, and hand-computed cases."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from replications.ppstructurev2.teds import teds

MINI = Path(os.environ.get("REPLICATIONS_MIRROR", "/nonexistent")) / "PubTabNet-mini"


def wrap(body: str) -> str:
    return f"<html><body><table>{body}</table></body></html>"


def test_identical_tables_score_one_and_empty_input_zero():
    t = wrap("<tr><td>a</td><td>b</td></tr>")
    assert teds(t, t) == 1.0
    assert teds("", t) == 0.0
    assert teds("<html><body><p>x</p></body></html>", t) == 0.0  # no table


def test_one_wrong_character_costs_its_normalised_edit_distance():
    # 3 nodes below <table> (tr, td, td); one cell "ab" vs "ax": Levenshtein 1 / 2 -> distance 0.5
    assert teds(wrap("<tr><td>ab</td><td>c</td></tr>"), wrap("<tr><td>ax</td><td>c</td></tr>")) == pytest.approx(1 - 0.5 / 3)


def test_a_missing_cell_and_a_span_change_cost_one_each():
    true = wrap("<tr><td>a</td><td>b</td></tr>")
    assert teds(wrap("<tr><td>a</td></tr>"), true) == pytest.approx(1 - 1 / 3)  # deleting td "b" costs 1, text included
    assert teds(wrap('<tr><td colspan="2">a</td><td>b</td></tr>'), true, structure_only=True) == pytest.approx(1 - 1 / 3)
    assert teds(wrap("<tr><td>zz</td><td>b</td></tr>"), true, structure_only=True) == 1.0  # text ignored


@pytest.mark.skipif(not (MINI / "sample_pred.json").exists(), reason="PubTabNet-mini is not in the mirror")
def test_matches_the_official_scores_of_the_authors_example_predictions():
    gt = json.loads((MINI / "sample_gt.json").read_text())
    pred = json.loads((MINI / "sample_pred.json").read_text())
    rows = re.findall(r"\| (PMC\S+\.png) \| \w+ \| ([\d.]+) \| ([\d.]+) \|", (MINI / "PROVENANCE.md").read_text())
    assert len(rows) == 20
    for name, full, struct in rows:  # the official values are printed to 6 decimals
        assert teds(pred[name], gt[name]["html"]) == pytest.approx(float(full), abs=1e-6), name
        assert teds(pred[name], gt[name]["html"], structure_only=True) == pytest.approx(float(struct), abs=1e-6), name
