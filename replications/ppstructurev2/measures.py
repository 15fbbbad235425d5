"""PP-StructureV2's paper-specific parts of its claim specs (paper.yaml ``claims:``, judged by shared.claims): the
structure accuracy against the paper's 76.31 % on the Wilson interval the run records, and the scale it was reached at.

Why a measure and not a library kind: the accuracy is one deterministic run of released weights over n tables, so
its uncertainty is the binomial one over tables (a Wilson interval, stored in the record by run.wilson), which no
library kind computes from per-unit samples.
"""

from __future__ import annotations

from typing import Any

from replications.ocr.details import run_details
from shared.claims import ClaimSpec
from shared.report.paper_hook import PaperResults
from shared.verdict import direction_status

FULL_SPLIT = "pubtabnet"  # the paper's 9,115 validation tables; pubtabnet_mini: the authors' 20 of them


def table_run(results: PaperResults, spec: ClaimSpec) -> tuple[str, dict[str, Any], int] | None:
    """(dataset, metrics, tables) of the spec's arm on the full split where it was run, else on the 20-table subset."""
    found = {ds: (record["runs"][0]["metrics"], details["tables"]) for ds, model, details, record in run_details(results)
             if model in spec.arms and details.get("task") == "table"}
    ds = next((d for d in (FULL_SPLIT, "pubtabnet_mini") if d in found), None)
    return None if ds is None else (ds, *found[ds])


def structure_accuracy(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, Any] | str:
    """Ours - the paper's accuracy on the run's 95 % Wilson interval, judged as no loss beyond the margin: supported
    when even the interval's low end is within the margin below the paper, contradicted when its high end is more
    than the margin below, else inconclusive (a small subset cannot resolve it)."""
    run = table_run(results, spec)
    if run is None:
        return "no table-recognition run: make replicate-ppstructurev2 dataset=pubtabnet_mini"
    ds, m, n = run
    metric, ref, margin = spec.judge["metric"], float(spec.judge["threshold"]), float(spec.judge["margin"])
    ours, lo, hi = m[metric], m[f"{metric}_ci_low"], m[f"{metric}_ci_high"]
    return {"status": direction_status(ref - hi, ref - lo, claimed="none", margin=margin),
            "effect": round(ours - ref, 4), "low": round(lo - ref, 4), "high": round(hi - ref, 4), "n": n,
            "method": "95% Wilson", "rule": f"paper - ours <= {margin:g} point (no loss beyond the margin)",
            "evidence": f"{ours:.1f} % [{lo:.1f}, {hi:.1f}] on {n} tables ({ds}) vs the paper's {ref:g} %"}


def scale(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, Any]:
    """The tables the accuracy was measured on (words only where fewer than the paper's) and the machine."""
    run = table_run(results, spec)
    if run is None:
        return {}
    ds, _, n = run
    cpu = ((results.record(ds, spec.arms[0]) or {}).get("environment") or {}).get("hardware", {}).get("cpu")
    out = {"dataset": ds, "hardware": cpu, "text": "" if ds == FULL_SPLIT else f"{n} of the 9,115 validation tables"}
    return {k: v for k, v in out.items() if v is not None}
