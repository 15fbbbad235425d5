"""Entity-level F1 over word-level BIO tags, in seqeval's default (conlleval) convention.

An entity starts at B-X, or at I-X whose previous tag is O or of another type (a "stray" I- opens an entity, as
conlleval and seqeval's default mode do), and runs while I-X follows. A predicted entity counts when its type and
its exact word span equal a gold entity's. Micro-averaged over all entities of the split, in percent. Counts are
kept per document so a bootstrap over documents recomputes F1 exactly as the point estimate.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

COUNT_FIELDS = ("tp", "pred", "gold")  # per document: matched entities, predicted entities, gold entities


def entities(tags: Sequence[str]) -> set[tuple[str, int, int]]:
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


def counts(gold: Sequence[str], pred: Sequence[str]) -> tuple[int, int, int]:
    if len(gold) != len(pred):
        raise ValueError(f"gold and predicted tag sequences differ in length: {len(gold)} vs {len(pred)}")
    g, p = entities(gold), entities(pred)
    return len(g & p), len(p), len(g)


def f1_from_counts(c: np.ndarray) -> np.ndarray:
    """F1 in percent from summed counts (..., 3): 2 tp / (pred + gold); 0 where there is nothing."""
    c = np.asarray(c, dtype=np.float64)
    denom = c[..., 1] + c[..., 2]
    return np.divide(200 * c[..., 0], denom, out=np.zeros_like(denom), where=denom > 0)


def scores(per_doc: np.ndarray) -> dict[str, float]:
    """Precision, recall and F1 (percent) from per-document counts (D, 3)."""
    tp, pred, gold = np.asarray(per_doc, dtype=np.float64).sum(0)
    return {"test_f1": float(f1_from_counts(np.array([tp, pred, gold]))),
            "test_precision": 100 * tp / pred if pred else 0.0, "test_recall": 100 * tp / gold if gold else 0.0}


def by_type(gold_docs: Sequence[Sequence[str]], pred_docs: Sequence[Sequence[str]], kinds: Sequence[str]
            ) -> dict[str, float]:
    """F1 per entity type (percent), micro over documents."""
    out = {}
    for kind in kinds:
        tot = np.zeros(3)
        for g, p in zip(gold_docs, pred_docs):
            ge = {e for e in entities(g) if e[0] == kind}
            pe = {e for e in entities(p) if e[0] == kind}
            tot += (len(ge & pe), len(pe), len(ge))
        out[f"test_f1_{kind.lower()}"] = float(f1_from_counts(tot))
    return out
