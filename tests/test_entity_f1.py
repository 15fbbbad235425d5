"""The suite's one entity-F1 (shared.metrics, BIO tags, seqeval's default convention) against seqeval itself: on
hand-computed cases and on the real FUNSD test forms' gold tags with seeded, planted prediction errors."""

from __future__ import annotations

import random

import pytest

from shared.metrics import bio_entities, entity_counts, entity_f1_from_counts, entity_scores, prf_from_counts
from tests.conftest import needs_mirror

seqeval = pytest.importorskip("seqeval.metrics", reason="seqeval (dev extra: pip install 'seqeval==1.2.2') is absent")

HAND_CASES = [  # (gold documents, predicted documents, hand-computed (tp, pred, gold))
    # gold: Q(0-1), A(2-3), H(5), A(6) = 4; pred: Q(0-1), A(2), Q(5), A(6) = 4; exact: Q(0-1), A(6) = 2
    ([["B-QUESTION", "I-QUESTION", "B-ANSWER", "I-ANSWER", "O", "B-HEADER", "B-ANSWER"]],
     [["B-QUESTION", "I-QUESTION", "B-ANSWER", "O", "O", "B-QUESTION", "B-ANSWER"]], (2, 4, 4)),
    # 2 of 3 entities right, 3 predicted; then the Q split in two: 1 right (A) of 3 predicted, 3 true
    ([["B-Q", "I-Q", "B-A", "O"], ["B-H"]], [["B-Q", "I-Q", "B-Q", "O"], ["B-H"]], (2, 3, 3)),
    ([["B-Q", "I-Q", "B-A", "O"], ["B-H"]], [["B-Q", "B-Q", "B-A", "O"], ["O"]], (1, 3, 3)),
    # stray I- tags open entities: gold Q(0-1), A(3-4), A(5), Q(6); pred A(0), Q(1), A(3-5), Q(6)
    ([["B-Q", "I-Q", "O", "I-A", "I-A", "B-A", "I-Q"]], [["I-A", "I-Q", "O", "B-A", "I-A", "I-A", "I-Q"]], (1, 4, 4)),
]


def seqeval_scores(gold_docs, pred_docs) -> dict[str, float]:
    """seqeval's micro precision / recall / F1, in percent like the suite's."""
    kw = {"zero_division": 0}
    return {"precision": 100 * seqeval.precision_score(gold_docs, pred_docs, **kw),
            "recall": 100 * seqeval.recall_score(gold_docs, pred_docs, **kw),
            "f1": 100 * seqeval.f1_score(gold_docs, pred_docs, **kw)}


def assert_matches_seqeval(gold_docs, pred_docs) -> dict[str, float]:
    ours = entity_scores(gold_docs, pred_docs)
    assert ours == pytest.approx(seqeval_scores(gold_docs, pred_docs), rel=1e-12, abs=1e-12)
    report = seqeval.classification_report(gold_docs, pred_docs, output_dict=True, zero_division=0)
    for kind in {t.partition("-")[2] for doc in [*gold_docs, *pred_docs] for t in doc} - {""}:
        per_type = entity_scores(gold_docs, pred_docs, kind)
        assert per_type["f1"] == pytest.approx(100 * report[kind]["f1-score"], rel=1e-12, abs=1e-12), kind
        assert per_type["precision"] == pytest.approx(100 * report[kind]["precision"], rel=1e-12, abs=1e-12), kind
        assert per_type["recall"] == pytest.approx(100 * report[kind]["recall"], rel=1e-12, abs=1e-12), kind
    return ours


def test_entities_follow_the_conlleval_convention():
    tags = ["B-Q", "I-Q", "O", "I-A", "I-A", "B-A", "I-Q", "B-H", "B-H", "I-A"]
    # a stray I-A after O opens an entity; I-Q after B-A opens a new Q entity; B-H B-H are two entities
    assert bio_entities(tags) == {("Q", 0, 1), ("A", 3, 4), ("A", 5, 5), ("Q", 6, 6), ("H", 7, 7), ("H", 8, 8),
                                  ("A", 9, 9)}
    assert bio_entities(["O", "O"]) == set() and bio_entities([]) == set()
    assert bio_entities(["I-A"]) == {("A", 0, 0)}
    from seqeval.metrics.sequence_labeling import get_entities

    assert bio_entities(tags) == set(get_entities(tags))  # seqeval's (type, first word, last word)


@pytest.mark.parametrize("gold,pred,expected", HAND_CASES)
def test_hand_computed_cases_agree_with_seqeval(gold, pred, expected):
    assert tuple(map(sum, zip(*(entity_counts(g, p) for g, p in zip(gold, pred))))) == expected
    tp, n_pred, n_gold = expected
    ours = assert_matches_seqeval(gold, pred)
    assert ours["f1"] == pytest.approx(200 * tp / (n_pred + n_gold))
    assert ours == pytest.approx({"precision": 100 * tp / n_pred, "recall": 100 * tp / n_gold,
                                  "f1": 200 * tp / (n_pred + n_gold)})


def test_nothing_to_score_is_zero_and_bad_input_is_refused():
    assert entity_f1_from_counts([0, 0, 0]) == 0.0
    assert prf_from_counts(0, 0, 0) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    assert entity_scores([["O"]], [["O"]]) == seqeval_scores([["O"]], [["O"]]) == {"precision": 0, "recall": 0, "f1": 0}
    with pytest.raises(ValueError, match="differ in length"):
        entity_counts(["O"], ["O", "O"])
    with pytest.raises(ValueError, match="2 gold documents but 1 predicted"):
        entity_scores([["O"], ["O"]], [["O"]])
    with pytest.raises(ValueError, match="not BIO"):
        bio_entities(["X-Q"])


# ---- real FUNSD tags with planted errors ---------------------------------------------------------------------

TYPES = ("HEADER", "QUESTION", "ANSWER")


def plant_errors(tags: list[str], rng: random.Random, rate: float) -> list[str]:
    """A prediction from gold tags: each gold entity, with probability `rate`, gets one of the usual mistakes."""
    out = list(tags)
    for kind, a, b in sorted(bio_entities(tags), key=lambda e: e[1]):
        if rng.random() >= rate:
            continue
        mistake = rng.choice(["type", "drop", "start_late", "end_early", "end_late", "split", "stray_i"])
        if mistake == "type":  # the whole span, another type
            other = rng.choice([t for t in TYPES if t != kind])
            out[a:b + 1] = [f"B-{other}"] + [f"I-{other}"] * (b - a)
        elif mistake == "drop":
            out[a:b + 1] = ["O"] * (b - a + 1)
        elif mistake == "start_late" and b > a:  # boundary shift: the first word left out
            out[a:a + 2] = ["O", f"B-{kind}"]
        elif mistake == "end_early" and b > a:
            out[b] = "O"
        elif mistake == "end_late" and b + 1 < len(out):  # boundary shift: swallows the next word
            out[b + 1] = f"I-{kind}"
        elif mistake == "split" and b > a:
            out[rng.randint(a + 1, b)] = f"B-{kind}"
        elif mistake == "stray_i":  # B- read as I- (conlleval still opens an entity unless I-<kind> precedes)
            out[a] = f"I-{kind}"
    return out


@pytest.fixture(scope="module")
def funsd_test_tags() -> list[list[str]]:
    from replications.ppstructurev2.kie import funsd_bio
    from shared.data import fetch, funsd

    forms = funsd.annotations(fetch(funsd.spec(("test",))), "test")
    return [funsd_bio(annotation["form"]) for _, annotation, _ in forms]


@needs_mirror
def test_funsd_gold_scores_100(funsd_test_tags):
    assert len(funsd_test_tags) == 50 and sum(map(len, funsd_test_tags)) == 8_707  # non-empty words (PROVENANCE.md)
    assert assert_matches_seqeval(funsd_test_tags, funsd_test_tags)["f1"] == 100.0


@needs_mirror
@pytest.mark.parametrize("seed,rate", [(0, 0.05), (1, 0.2), (2, 0.5), (3, 1.0)])
def test_funsd_with_planted_errors_agrees_with_seqeval(funsd_test_tags, seed, rate):
    rng = random.Random(seed)
    pred = [plant_errors(tags, rng, rate) for tags in funsd_test_tags]
    ours = assert_matches_seqeval(funsd_test_tags, pred)
    assert 0 < ours["f1"] < 100 and ours["precision"] != ours["recall"]  # the errors changed both counts
