"""An official-code record against the suite's record of the same model, seed by seed.

Where seed s means the same thing on both sides (the same split, say; the paper decides and says so), the
per-seed differences suite - official are paired: their mean and Student-t 95% interval (shared.stats) say
how far the suite's implementation is from the authors' code beyond seed noise. ``agreement_status`` judges
that interval against a tolerance (the paper.yaml one for the metric): supported when the whole interval
lies within ±tolerance, contradicted when it lies wholly outside, else inconclusive (shared.verdict).
"""

from __future__ import annotations

from typing import Any

from shared.stats import summarize
from shared.verdict import CONTRADICTED, INCONCLUSIVE, NOT_RUN, SUPPORTED, direction_status


def per_seed(record: dict[str, Any], metric: str) -> dict[int, float]:
    return {int(r["seed"]): float(r["metrics"][metric]) for r in record.get("runs") or [] if metric in r["metrics"]}


def paired(official: dict[str, Any], suite: dict[str, Any], metric: str) -> dict[str, Any]:
    """The seeds both records ran, each side's value, the differences (suite - official) and their summary."""
    theirs, ours = per_seed(official, metric), per_seed(suite, metric)
    seeds = sorted(set(theirs) & set(ours))
    diffs = [ours[s] - theirs[s] for s in seeds]
    out: dict[str, Any] = {"metric": metric, "seeds": seeds, "official": [theirs[s] for s in seeds],
                           "suite": [ours[s] for s in seeds], "differences": diffs,
                           "only_official": sorted(set(theirs) - set(ours)), "only_suite": sorted(set(ours) - set(theirs))}
    if diffs:
        s = summarize(diffs)
        out.update(mean_difference=s["mean"], std=s["std"], n=s["n"], ci95=[s["ci95_low"], s["ci95_high"]])
    return out


def agreement_status(low: float, high: float, tolerance: float) -> str:
    """Two one-sided checks on the interval [low, high] of the difference: within +tolerance and within -tolerance."""
    above = direction_status(low, high, claimed="none", margin=tolerance)  # difference <= +tolerance
    below = direction_status(-high, -low, claimed="none", margin=tolerance)  # -difference <= +tolerance
    if CONTRADICTED in (above, below):
        return CONTRADICTED
    return SUPPORTED if above == below == SUPPORTED else INCONCLUSIVE


def agreement(comparison: dict[str, Any], tolerance: float) -> str:
    """The status of a ``paired`` comparison; not run without two paired seeds (no interval)."""
    if comparison.get("n", 0) < 2:
        return NOT_RUN
    return agreement_status(*comparison["ci95"], tolerance)
