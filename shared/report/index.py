"""results/index.json and results/index.csv: every row and claim of every paper, with its recomputed status.

The same ``Row`` and ``Claim`` objects the pages and the terminal print, so all of them agree by construction;
tests/test_report_agreement.py checks it row by row.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from shared.atomic import write_json_atomic, write_text_atomic
from shared.report.content import Report, Row
from shared.report.paper_hook import Claim
from shared.report.text import ratio_text

INDEX_JSON, INDEX_CSV = "index.json", "index.csv"
ROW_FIELDS = ("paper", "dataset", "model", "metric", "mean", "std", "n", "reference", "reference_kind", "source",
              "verified", "difference", "status", "commits", "hardware", "wall_seconds")


def row_entry(row: Row) -> dict[str, Any]:
    return {"paper": row.paper, "dataset": row.dataset, "model": row.model, "metric": row.metric,
            "mean": row.mean, "std": row.std, "n": row.n, "reference": row.reported, "reference_kind": row.kind,
            "source": row.source, "verified": row.verified, "difference": row.difference, "status": row.status,
            "commits": ", ".join(row.commits), "hardware": " + ".join(row.cpus) if not row.gpu else row.gpu,
            "wall_seconds": row.wall_seconds}


def claim_entry(paper: str, claim: Claim) -> dict[str, Any]:
    """A claim as the index carries it: every field of the Claim, its display status and its scale ratio as the
    first screen prints it ('1/1850')."""
    return {"paper": paper, **claim.as_json(), "display_status": claim.display_status,
            "scale_ratio_text": ratio_text(claim.scale_ratio)}


def index(report: Report) -> dict[str, Any]:
    return {
        "generated_at_commit": report.commit,  # the pages' stamp (content.generation_stamp), not HEAD
        "rows": [row_entry(r) for s in report.papers for r in s.rows],
        # every claim with its id, short sentence, dataset, and the scale reached beside the claim's (and their ratio)
        "claims": [claim_entry(s.paper, c) for s in report.papers for c in s.claims],
        "papers_without_results": list(report.without_results),
        # only when there are any, so that a results folder without one keeps its committed bytes
        **({"failed_records": list(report.failed)} if report.failed else {}),
    }


def to_csv(entries: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=ROW_FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(entries)
    return buffer.getvalue()


def write_index(root: Path, report: Report) -> dict[str, Any]:
    data = index(report)
    write_json_atomic(root / INDEX_JSON, data)
    write_text_atomic(root / INDEX_CSV, to_csv(data["rows"]))
    return data
