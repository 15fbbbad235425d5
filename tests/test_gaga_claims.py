"""GAGA's claim specs (paper.yaml) load and judge the committed records as the page shows them, and the official
code's F1-macro collapse: its threshold selection (np.argmax over a NaN F1) fails where the top validation score
is a negative's, which the suite's threshold (0/0 counts as F1 0) does not."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score, precision_recall_curve

from replications.gaga.measures import collapsed
from replications.gaga.metrics import best_f1_threshold
from replications.gaga.report import PAPER_FILE
from shared.claims import judge_paper, load_claims
from shared.official.compare import per_seed
from shared.paths import RESULTS
from shared.report.paper_hook import load_paper_results


def test_specs_judge_the_committed_records() -> None:
    results = load_paper_results(RESULTS, "gaga")
    verdicts = {v.id: v for v in judge_paper(load_claims(PAPER_FILE, "gaga"), results)}
    assert {i: v.status for i, v in verdicts.items()} == {
        "beats_graphsage": "inconclusive", "beats_mlp": "supported", "beats_bwgnn": "contradicted",
        "matches_official_auc": "inconclusive", "matches_official_f1": "inconclusive"}
    auc = verdicts["matches_official_auc"]  # unchanged from the page's former own pairing
    assert auc.effect == pytest.approx(-0.0739, abs=1e-4) and auc.interval == pytest.approx((-1.657, 1.510), abs=1e-3)
    assert verdicts["matches_official_f1"].n == 5 and "collapsed" in verdicts["matches_official_f1"].caveat
    assert all(v.n == 10 and v.dataset == "tolokers" for i, v in verdicts.items() if i.startswith("beats_"))
    official = per_seed(results.side_file("tolokers/official.json"), "test_f1_macro")
    assert collapsed(official, 50.0) == [0, 1, 3, 4, 9]


def official_threshold(y: np.ndarray, s: np.ndarray) -> float:
    """GAGA's utils/metrics.py calc_ap_and_thres at 85ad1c1, as written (NaN where P = R = 0)."""
    precision, recall, thresholds = precision_recall_curve(y, s)
    with np.errstate(invalid="ignore"):
        f1 = 2 * precision * recall / (precision + recall)
    return thresholds[f1.argmax(axis=0)]


def test_the_official_threshold_collapses_when_the_top_validation_node_is_negative() -> None:
    rng = np.random.default_rng(0)
    y = (rng.random(2000) < 0.22).astype(int)
    s = rng.normal(size=2000) + 1.2 * y
    s[np.flatnonzero(y == 0)[0]] = 10.0  # the highest score is a negative's
    official, suite = official_threshold(y, s), best_f1_threshold(y, s)
    assert official == 10.0  # above every positive: only that one node is predicted positive
    assert 100 * f1_score(y, s >= official, average="macro") < 50 < 100 * f1_score(y, s >= suite, average="macro")
    s[np.flatnonzero(y == 1)[0]] = 11.0  # a positive on top: no NaN, both pick the same threshold
    assert official_threshold(y, s) == best_f1_threshold(y, s)
