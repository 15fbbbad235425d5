"""Entity-level F1 over word-level BIO tags, in seqeval's default (conlleval) convention: shared.metrics holds the
metric (PP-StructureV2's SER uses the same); here are mmLayout's record fields.

Micro-averaged over all entities of the split, in percent. Counts are kept per document (COUNT_FIELDS) so a
bootstrap over documents recomputes F1 exactly as the point estimate.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from shared.metrics import ENTITY_COUNT_FIELDS as COUNT_FIELDS
from shared.metrics import bio_entities as entities
from shared.metrics import entity_counts as counts
from shared.metrics import entity_f1_from_counts as f1_from_counts
from shared.metrics import entity_scores, prf_from_counts

__all__ = ["COUNT_FIELDS", "by_type", "counts", "entities", "f1_from_counts", "scores"]


def scores(per_doc: np.ndarray) -> dict[str, float]:
    """Precision, recall and F1 (percent) from per-document counts (D, 3)."""
    s = prf_from_counts(*np.asarray(per_doc, dtype=np.float64).sum(0))
    return {"test_f1": s["f1"], "test_precision": s["precision"], "test_recall": s["recall"]}


def by_type(gold_docs: Sequence[Sequence[str]], pred_docs: Sequence[Sequence[str]], kinds: Sequence[str]
            ) -> dict[str, float]:
    """F1 per entity type (percent), micro over documents."""
    return {f"test_f1_{kind.lower()}": entity_scores(gold_docs, pred_docs, kind)["f1"] for kind in kinds}
