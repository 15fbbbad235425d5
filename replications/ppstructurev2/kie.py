"""Key information extraction: the SER and RE metrics and the TB-YX reading order of PP-StructureV2.

- SER (semantic entity recognition) is scored at entity level (shared.metrics.entity_scores), as PaddleOCR's
  VQASerTokenMetric does through seqeval: word-level BIO tags -> entity spans (conlleval rules: an entity starts at
  B-X, or at I-X after O or another type, and runs while I-X follows); an entity counts when type and span both
  match; micro precision, recall and F1 over every entity of every document. FUNSD's `other` is O (PaddleOCR drops
  OTHER from the labels).
- RE (relation extraction) is scored on key -> value links: a predicted (question entity, answer entity) pair
  counts when both ends match a ground-truth link; micro precision, recall, F1 (percent).
- TB-YX: text boxes sorted by (y1, x1), then a box whose y1 lies within `th` (20 px) of the box before it and
  whose x1 is smaller moves before it (insertion-style, as ppocr/data/imaug/vqa order_by_tbyx does).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shared.metrics import entity_scores, prf_from_counts

# SER is shared.metrics' entity P/R/F1 (the same metric scores mmLayout): re-exported under PaddleOCR's name.
ser_scores = entity_scores


def re_scores(true_links: Sequence[set[tuple[int, int]]], pred_links: Sequence[set[tuple[int, int]]]
              ) -> dict[str, float]:
    """Link-level micro P/R/F1 (percent): per document, sets of (key entity id, value entity id)."""
    if len(true_links) != len(pred_links):
        raise ValueError(f"{len(true_links)} true documents but {len(pred_links)} predicted")
    correct = sum(len(set(t) & set(p)) for t, p in zip(true_links, pred_links))
    return prf_from_counts(correct, sum(len(set(p)) for p in pred_links), sum(len(set(t)) for t in true_links))


# ---- FUNSD ground truth -------------------------------------------------------------------------------------

def funsd_bio(entities: list[dict[str, Any]]) -> list[str]:
    """Word-level BIO tags of a FUNSD form in annotation order (words with empty text dropped, as PaddleOCR's
    FUNSD conversion drops empty-text words)."""
    tags = []
    for e in entities:
        words = [w for w in e["words"] if w["text"].strip()]
        label = e["label"].upper()
        for k, _ in enumerate(words):
            tags.append("O" if label == "OTHER" else f"{'B' if k == 0 else 'I'}-{label}")
    return tags


def funsd_links(entities: list[dict[str, Any]]) -> set[tuple[int, int]]:
    """Question -> answer links of a FUNSD form (header links are not key-value pairs and are not scored)."""
    label = {e["id"]: e["label"] for e in entities}
    out = set()
    for e in entities:
        for a, b in e["linking"]:
            if label.get(a) == "question" and label.get(b) == "answer":
                out.add((a, b))
            elif label.get(b) == "question" and label.get(a) == "answer":
                out.add((b, a))
    return out


# ---- reading order ------------------------------------------------------------------------------------------

def tb_yx(boxes: Sequence[Sequence[float]], th: float = 20, official: bool = True) -> list[int]:
    """Reading order (indices into boxes, x1 y1 x2 y2) by PP-StructureV2's TB-YX rule.

    official=True keeps PaddleOCR's loop bound (`for j in range(i, 0, -1)`), under which the first two boxes
    after the (y, x) sort are never swapped; official=False applies the rule to them as well."""
    order = sorted(range(len(boxes)), key=lambda k: (boxes[k][1], boxes[k][0]))
    stop = 0 if official else -1
    for i in range(len(order) - 1):
        for j in range(i, stop, -1):
            a, b = boxes[order[j]], boxes[order[j + 1]]
            if abs(b[1] - a[1]) < th and b[0] < a[0]:
                order[j], order[j + 1] = order[j + 1], order[j]
            else:
                break
    return order
