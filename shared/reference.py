"""A paper's reported numbers (its paper.yaml) and the comparison of a reproduction against them.

paper.yaml holds ``reported``: a list of entries {dataset, model, metric, value, std, source, verified,
note}; ``value: null`` means the number is unknown (never guessed). ``tolerances`` maps a metric to the
absolute difference (in the metric's own units) within which a reproduction counts as reproduced.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

REPRODUCED, NOT_REPRODUCED, NO_REFERENCE = "reproduced", "not reproduced", "no reference"


def load_paper(path: Path) -> dict[str, Any]:
    paper = yaml.safe_load(Path(path).read_text())
    for key in ("title", "reported", "tolerances"):
        if key not in paper:
            raise ValueError(f"{path}: missing required key '{key}'")
    for entry in paper["reported"]:
        missing = {"dataset", "model", "metric", "value", "source", "verified"} - entry.keys()
        if missing:
            raise ValueError(f"{path}: reported entry {entry} lacks {sorted(missing)}")
    return paper


def reported_for(paper: dict[str, Any], dataset: str, model: str) -> dict[str, dict[str, Any]]:
    return {
        e["metric"]: e for e in paper["reported"] if e["dataset"] == dataset and e["model"] == model
    }


def compare(
    paper: dict[str, Any], dataset: str, model: str, aggregate: dict[str, dict[str, float]]
) -> list[dict[str, Any]]:
    """One row per reproduced metric: reported value and source, difference, status."""
    reported = reported_for(paper, dataset, model)
    rows = []
    for metric, agg in aggregate.items():
        ref = reported.get(metric, {})
        value = ref.get("value")
        tol = paper["tolerances"].get(metric)
        if value is None or tol is None:
            status, diff = NO_REFERENCE, None
        else:
            diff = agg["mean"] - value
            status = REPRODUCED if abs(diff) <= tol else NOT_REPRODUCED
        rows.append(
            {
                "metric": metric,
                "reproduced_mean": agg["mean"],
                "reproduced_std": agg["std"],
                "n": agg["n"],
                "ci95": [agg["ci95_low"], agg["ci95_high"]],
                "reported": value,
                "reported_std": ref.get("std"),
                "source": ref.get("source"),
                "verified": ref.get("verified"),
                "tolerance": tol,
                "difference": diff,
                "status": status,
            }
        )
    return rows
