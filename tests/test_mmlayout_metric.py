"""Entity F1 over BIO tags (seqeval default convention) against hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from replications.mmlayout.metrics import by_type, counts, entities, f1_from_counts, scores


def test_entities_follow_the_conlleval_convention():
    tags = ["B-Q", "I-Q", "O", "I-A", "I-A", "B-A", "I-Q", "B-H", "B-H"]
    # a stray I-A after O opens an entity; I-Q after B-A opens a new Q entity; B-H B-H are two entities
    assert entities(tags) == {("Q", 0, 1), ("A", 3, 4), ("A", 5, 5), ("Q", 6, 6), ("H", 7, 7), ("H", 8, 8)}
    assert entities(["O", "O"]) == set()
    assert entities(["I-A"]) == {("A", 0, 0)}


def test_hand_computed_counts_and_f1():
    gold = ["B-QUESTION", "I-QUESTION", "B-ANSWER", "I-ANSWER", "O", "B-HEADER", "B-ANSWER"]
    pred = ["B-QUESTION", "I-QUESTION", "B-ANSWER", "O", "O", "B-QUESTION", "B-ANSWER"]
    # gold: Q(0-1), A(2-3), H(5), A(6) = 4; pred: Q(0-1), A(2), Q(5), A(6) = 4; exact: Q(0-1), A(6) = 2
    assert counts(gold, pred) == (2, 4, 4)
    # F1 = 2*2 / (4+4) = 50 %
    assert scores(np.array([counts(gold, pred)])) == {"test_f1": 50.0, "test_precision": 50.0, "test_recall": 50.0}
    per = by_type([gold], [pred], ["HEADER", "QUESTION", "ANSWER"])
    # header: 0 tp, 0 pred, 1 gold -> 0; question: 1 tp, 2 pred, 1 gold -> 2/3; answer: 1 tp, 2 pred, 2 gold -> 1/2
    assert per["test_f1_header"] == 0.0
    assert per["test_f1_question"] == pytest.approx(200 / 3)
    assert per["test_f1_answer"] == pytest.approx(50.0)


def test_micro_average_sums_counts_over_documents():
    per_doc = np.array([[1, 1, 1], [0, 3, 1]])  # 1/1/1 and 0/3/1 -> tp 1, pred 4, gold 2 -> 2/6
    assert scores(per_doc)["test_f1"] == pytest.approx(100 / 3)
    assert f1_from_counts(np.array([0, 0, 0])) == 0.0  # nothing predicted, nothing to find


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="differ in length"):
        counts(["O"], ["O", "O"])
    with pytest.raises(ValueError, match="not BIO"):
        entities(["X-Q"])
