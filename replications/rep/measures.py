"""REP's paper-specific parts of its claim specs (paper.yaml ``claims:``, judged by shared.claims).

"Improving or maintaining prediction quality" is judged on the converged bases only (the toy CPU bases say nothing
about trained embeddings): per (dataset, model), REP's test-MRR change with its 95% interval, over seeds where there
are several, else over the one seed's test triples (replications/rep/paired.py stores it in the record); the claim
is contradicted where any base contradicts it, supported where every base supports it. The ogbl-wikikg2 claim is
judged by the sign of REP's relative test-MRR change on every base model and seed run there.
"""

from __future__ import annotations

from typing import Any

from shared.claims import ClaimSpec
from shared.report.paper_hook import PaperResults
from shared.verdict import CONTRADICTED, INCONCLUSIVE, SUPPORTED, direction_status

TRIPLES = "95% normal over test triples"  # paired.py's interval of one seed's change


def converged(record: dict[str, Any]) -> bool:
    """Trained to its plateau: every seed ran the early-stopping recipe (its summary says why it stopped)."""
    return all("stopped" in r["train"] for r in record["runs"])


def mrr_change(record: dict[str, Any]) -> dict[str, Any]:
    """REP's test-MRR change and its 95% interval over seeds where there are several (the record's t interval),
    else over the one seed's test triples (none stored: NaN bounds, n = 1); with what the interval is over."""
    runs, agg = record["runs"], record["aggregate"]["test_mrr_delta"]
    if len(runs) > 1:
        return {"delta": agg["mean"], "ci95": [agg["ci95_low"], agg["ci95_high"]], "n": len(runs), "method": "t",
                "interval": f"t interval over {len(runs)} seeds"}
    change = runs[0]["train"].get("test_mrr_change")
    if change is None:  # a record made before the per-triple interval existed
        return {"delta": agg["mean"], "ci95": [float("nan")] * 2, "n": 1, "method": "t",
                "interval": "no interval (1 seed, no per-triple change stored)"}
    return {"delta": change["delta"], "ci95": [change["ci95_low"], change["ci95_high"]], "n": change["triples"],
            "method": TRIPLES, "interval": f"over {change['triples']:,} test triples (1 seed)"}


def effect_word(low: float, high: float) -> str:
    return "improves" if low > 0 else "hurts" if high < 0 else "no effect" if low <= high else "inconclusive"


def base_verdicts(results: PaperResults, margin: float) -> list[dict[str, Any]]:
    """One verdict per converged (dataset, model): "improving or maintaining" is contradicted by a loss
    (base - REP) wholly above ``margin`` MRR, supported by one wholly at or below it."""
    out = []
    for (dataset, model), record in sorted(results.records.items()):
        if not converged(record):
            continue
        change = mrr_change(record)
        low, high = change["ci95"]
        out.append({"dataset": dataset, "model": model, "seeds": len(record["runs"]), **change,
                    "effect": effect_word(low, high), "status": direction_status(-high, -low, claimed="none", margin=margin),
                    "base_test_mrr": record["aggregate"]["test_mrr_base"]["mean"]})
    return out


def improves_or_maintains(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, Any] | str:
    """The claim over every converged base, shown by the base closest to contradicting it (the lowest interval)."""
    options = spec.judge.get("options") or {}
    verdicts = base_verdicts(results, float(spec.judge.get("margin", 0.0)))
    if not verdicts:
        return options["not_run"]
    statuses = {v["status"] for v in verdicts}
    status = CONTRADICTED if CONTRADICTED in statuses else SUPPORTED if statuses == {SUPPORTED} else INCONCLUSIVE
    worst = min(verdicts, key=lambda v: v["ci95"][0])
    parts = [f"{v['model']} {v['dataset']} {v['delta']:+.4f} [{v['ci95'][0]:+.4f}, {v['ci95'][1]:+.4f}] ({v['effect']})"
             for v in verdicts]
    return {"status": status, "effect": worst["delta"], "low": worst["ci95"][0], "high": worst["ci95"][1],
            "n": worst["n"], "method": worst["method"], "unit": "test MRR (REP - base)",
            "rule": f"every converged base's loss (base - REP) <= {spec.judge.get('margin', 0):g} MRR; shown: "
                    f"{worst['model']} {worst['dataset']}, the lowest interval",
            "evidence": f"{len(verdicts)} converged base(s), Δ test MRR with 95% interval: " + "; ".join(parts)}


def converged_scale(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, Any]:
    trained = [r for r in results.records.values() if converged(r)]
    seeds = sorted({len(r["runs"]) for r in trained})
    cpus = sorted({((r.get("environment") or {}).get("hardware") or {}).get("cpu", "?") for r in trained})
    return {"dataset": ", ".join(sorted({r["dataset"] for r in trained})), "hardware": ", ".join(cpus),
            "text": f"{', '.join(map(str, seeds)) or 'no'} of 3 seeds; toy bases not judged"} if trained else {}


def wikikg2_gains(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, dict[Any, float]] | str:
    """{"rep": {(model, run): relative test-MRR change in %}, "base": {...: 0}}: the sign kind's samples, one per
    base model and seed run on the spec's dataset (judge.options.dataset)."""
    options = spec.judge.get("options") or {}
    gains = {(model, i): 100 * (run["metrics"]["test_mrr_rep"] / run["metrics"]["test_mrr_base"] - 1)
             for model, record in results.models(options["dataset"]).items()
             for i, run in enumerate(record["runs"]) if run["metrics"].get("test_mrr_base")}
    return {"rep": gains, "base": dict.fromkeys(gains, 0.0)} if gains else options["not_run"]
