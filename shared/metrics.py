"""Metrics shared by the papers. Class metrics: numpy/torch arrays in, plain floats in [0, 1] out. Entity metrics
(word-level BIO tags, the seqeval convention; used by mmLayout and PP-StructureV2): percent."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from sklearn.metrics import f1_score


def _np(a: np.ndarray | torch.Tensor) -> np.ndarray:
    return a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)


def f1_micro_macro(y_true, y_pred) -> tuple[float, float]:
    """Micro- and macro-F1 of class predictions, or of multi-hot predictions (multi-label)."""
    y_true, y_pred = _np(y_true), _np(y_pred)
    return (
        float(f1_score(y_true, y_pred, average="micro", zero_division=0)),
        float(f1_score(y_true, y_pred, average="macro", zero_division=0)),
    )


def multilabel_topk_by_true_count(scores, y_true) -> np.ndarray:
    """Multi-hot prediction picking, per node, as many top-scoring labels as it truly has.

    This is how PSHGCN's official hgb/utils.py scores IMDB. It reads the true label count at test
    time, so it is not the HGB standard (``multilabel_threshold``). A node with no true label gets
    every label, as numpy's ``argsort()[-0:]`` does in the official code.
    """
    scores, y_true = _np(scores), _np(y_true)
    pred = np.zeros(scores.shape, dtype=np.int64)
    order = np.argsort(scores, axis=1, kind="stable")
    for i, k in enumerate(y_true.sum(axis=1).astype(int)):
        pred[i, order[i, -k:] if k > 0 else order[i]] = 1
    return pred


def multilabel_threshold(logits, threshold: float = 0.0) -> np.ndarray:
    """HGB's standard multi-label rule: a label is predicted where its logit exceeds 0."""
    return (_np(logits) > threshold).astype(np.int64)


# ---- entity-level precision / recall / F1 over BIO tags --------------------------------------------------------
# seqeval's default (conlleval) convention, as PaddleOCR's VQASerTokenMetric and LayoutLM's FUNSD evaluation use it:
# an entity starts at B-X, or at I-X whose previous tag is O or of another type (a "stray" I- opens an entity), and
# runs while I-X follows. A predicted entity counts when its type and its exact word span equal a gold entity's.
# Micro-averaged over every entity of every document. tests/test_entity_f1.py checks it against seqeval itself.

ENTITY_COUNT_FIELDS = ("tp", "pred", "gold")  # per document: matched entities, predicted entities, gold entities


def bio_entities(tags: Sequence[str]) -> set[tuple[str, int, int]]:
    """(type, first word, last word) of every entity in one BIO sequence."""
    out, start, kind = set(), None, None
    for i, tag in enumerate([*tags, "O"]):
        prefix, _, t = tag.partition("-")
        if prefix not in ("B", "I", "O"):
            raise ValueError(f"tag {tag!r} is not BIO (expected O, B-<type> or I-<type>)")
        continues = prefix == "I" and t == kind
        if start is not None and not continues:
            out.add((kind, start, i - 1))
            start, kind = None, None
        if prefix == "B" or (prefix == "I" and not continues):
            start, kind = i, t
    return out


def entity_counts(gold: Sequence[str], pred: Sequence[str], kind: str | None = None) -> tuple[int, int, int]:
    """(matched, predicted, gold) entities of one document; only those of type `kind` when given."""
    if len(gold) != len(pred):
        raise ValueError(f"gold and predicted tag sequences differ in length: {len(gold)} vs {len(pred)} tags")
    g, p = bio_entities(gold), bio_entities(pred)
    if kind is not None:
        g, p = {e for e in g if e[0] == kind}, {e for e in p if e[0] == kind}
    return len(g & p), len(p), len(g)


def entity_f1_from_counts(c) -> np.ndarray:
    """F1 in percent from summed counts (..., 3): 2 tp / (pred + gold); 0 where there is nothing."""
    c = np.asarray(c, dtype=np.float64)
    denom = c[..., 1] + c[..., 2]
    return np.divide(200 * c[..., 0], denom, out=np.zeros_like(denom), where=denom > 0)


def prf_from_counts(tp: float, pred: float, gold: float) -> dict[str, float]:
    """Precision, recall and F1 in percent of `tp` matches among `pred` predicted and `gold` true items (0 where
    there is nothing to divide by)."""
    return {"precision": float(100 * tp / pred) if pred else 0.0, "recall": float(100 * tp / gold) if gold else 0.0,
            "f1": float(entity_f1_from_counts([tp, pred, gold]))}


def entity_scores(gold_docs: Sequence[Sequence[str]], pred_docs: Sequence[Sequence[str]], kind: str | None = None
                  ) -> dict[str, float]:
    """Micro precision, recall and F1 (percent) over documents of word-level BIO tags; of type `kind` only when
    given (seqeval's per-type report)."""
    if len(gold_docs) != len(pred_docs):
        raise ValueError(f"{len(gold_docs)} gold documents but {len(pred_docs)} predicted")
    tot = np.zeros(3)
    for g, p in zip(gold_docs, pred_docs):
        tot += entity_counts(g, p, kind)
    return prf_from_counts(*tot)
