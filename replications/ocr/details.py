"""Per-item details of an OCR measurement run (PP-OCRv3, PP-StructureV2): what their pages bootstrap and draw.

A run keeps them in its record (``runs[0].train.details``); runs made before that kept them in a file beside the
record, ``<dataset>/<model>.details.json``, which is still read for them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from shared.report.paper_hook import PaperResults


def run_details(results: PaperResults) -> Iterator[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """(dataset, model, details, record) of every record whose first run has details, in the record or beside it."""
    for (ds, model), record in results.records.items():
        if not record.get("runs"):
            continue
        details = record["runs"][0].get("train", {}).get("details")
        path = results.folder / ds / f"{model}.details.json"
        if details is None and path.exists():  # a run made before the details went into the record
            details = json.loads(path.read_text())
        if details is not None:
            yield ds, model, details, record
