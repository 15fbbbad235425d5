"""ERNIE-mmLayout's paper-specific parts of its claim specs (paper.yaml ``claims:``, judged by shared.claims): the
paired document bootstrap of corpus-level F1, the rule that also needs every seed to agree, and the scale reached;
for the page, the learning curves and how the label-free lines relate to FUNSD's segments (unit_statistics).

Why a measure and not a library kind: F1 is a corpus-level statistic (summed counts over documents), not a mean of
per-unit values, so the bootstrap resamples the 50 test documents (the unit the test set is drawn in) and recomputes
F1 from summed counts, as the point estimate is computed. Arms are compared *paired*: one draw of documents scores
every arm and every seed, and the difference is the mean over seeds of the per-seed differences.

The per-document counts of a seed are in its record (``runs[i].train.details``, from train's summary); runs made
before that kept them in ``<model>.seed<s>.details.json`` beside the record, read from ``results.folder``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from replications.mmlayout.metrics import f1_from_counts
from shared.claims import ClaimSpec
from shared.report.paper_hook import PaperResults
from shared.stats import percentile_interval, resample_indices
from shared.verdict import INCONCLUSIVE, direction_status, sign_status


def seed_details(results: PaperResults, record: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """seed -> that seed's per-document counts and example predictions: from the record (train's summary) or,
    for a run from before, the details file beside the record; a seed with neither is left out."""
    out = {}
    for run in record["runs"]:
        details = run["train"].get("details")
        path = results.folder / record["dataset"] / f"{record['model']}.seed{run['seed']}.details.json"
        if details is None and path.exists():
            details = json.loads(path.read_text())
        if details is not None:
            out[run["seed"]] = details
    return out


def common_seeds(details: dict[str, dict[int, dict[str, Any]]]) -> list[int]:
    sets = [set(d) for d in details.values()]
    return sorted(set.intersection(*sets)) if sets else []


def per_doc(details: dict[int, dict[str, Any]], seeds: list[int]) -> np.ndarray:
    """(S, D, 3) per-document [tp, pred, gold] for the given seeds."""
    return np.array([details[s]["per_doc"] for s in seeds], dtype=np.float64)


def seed_mean_f1(counts: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray | float:
    """Mean over seeds of corpus F1; with idx (B, D): one value per bootstrap draw."""
    if idx is None:
        return float(f1_from_counts(counts.sum(1)).mean())
    return f1_from_counts(counts[:, idx].sum(2)).mean(0)  # counts[:, idx]: (S, B, D, 3)


def arm_interval(counts: np.ndarray, boot: dict[str, Any]) -> tuple[float, float]:
    idx = resample_indices(counts.shape[1], boot["samples"], boot["seed"])
    return percentile_interval(seed_mean_f1(counts, idx), boot["level"])


def paired(a: np.ndarray, b: np.ndarray, boot: dict[str, Any]) -> dict[str, Any]:
    """F1(a) - F1(b) in points, paired by seed and document: point, per-seed values, bootstrap CI over documents."""
    if a.shape != b.shape:
        raise ValueError(f"paired comparison needs the same seeds and documents: {a.shape} vs {b.shape}")
    per_seed = (f1_from_counts(a.sum(1)) - f1_from_counts(b.sum(1))).tolist()
    idx = resample_indices(a.shape[1], boot["samples"], boot["seed"])
    lo, hi = percentile_interval(seed_mean_f1(a, idx) - seed_mean_f1(b, idx), boot["level"])
    return {"mean": float(np.mean(per_seed)), "per_seed": per_seed, "ci95": [lo, hi],
            "seed_std": float(np.std(per_seed, ddof=1)) if len(per_seed) > 1 else float("nan")}


def status(d: dict[str, Any]) -> str:
    """The document interval against 0 (direction_status), kept only when every seed's difference has the same
    sign (sign_status): supported needs the interval above 0 and every seed positive, else inconclusive."""
    by_interval = direction_status(*d["ci95"])
    return by_interval if by_interval == INCONCLUSIVE or sign_status(d["per_seed"]) == by_interval else INCONCLUSIVE


def coarse_units_gain(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, Any] | str:
    """The claim's verdict parts: arm - control (spec.arms) in F1 points on the seeds both have; where the seeds'
    signs overrule the interval, the evidence names the seed that decided it."""
    records = {m: results.record(dataset, m) for m in spec.arms}
    details = {m: seed_details(results, r) for m, r in records.items() if r is not None}
    if not all(details.get(m) for m in spec.arms):
        return f"no {' and '.join(spec.arms)} records with per-document counts: make replicate-mmlayout"
    seeds = common_seeds(details)
    arm, control = (per_doc(details[m], seeds) for m in spec.arms)
    d = paired(arm, control, dict(records[spec.arms[0]]["config"]["paper"]["protocol"]["bootstrap"]))
    verdict, by_interval = status(d), direction_status(*d["ci95"])
    decided = "" if verdict == by_interval else "; decided by a seed: " + ", ".join(
        f"seed {s} {x:+.2f}" for s, x in zip(seeds, d["per_seed"]) if (x > 0) != (d["ci95"][0] > 0))
    return {"status": verdict, "effect": d["mean"], "low": d["ci95"][0], "high": d["ci95"][1], "n": arm.shape[1],
            "method": "95% paired bootstrap over test documents",
            "rule": "interval above 0 and every seed's difference positive",
            "evidence": f"per seed {', '.join(f'{x:+.2f}' for x in d['per_seed'])} (seeds {', '.join(map(str, seeds))}){decided}"}


def curves(records: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, float]]]:
    """Each arm's learning curve: test F1 after every epoch of the first seed that recorded it."""
    out = {}
    for name, r in records.items():
        for run in r["runs"]:
            pts = [p for p in run["train"].get("curve", []) if "test_f1" in p]
            if pts:
                out[name] = pts
                break
    return out


def scale(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, Any]:
    """Parameters, dataset, machine and, in words, seeds x epochs and whether F1 was still rising at the end."""
    records = results.models(dataset) if dataset else {}
    record = records.get(spec.arms[0])
    if record is None:
        return {}
    model = record["config"]["model"]
    rising = any(p[-1]["test_f1"] - p[-2]["test_f1"] > 1.0 for p in curves(records).values() if len(p) >= 2)
    out = {"params": record["runs"][0]["train"].get("parameters"), "dataset": dataset,
           "hardware": ((record.get("environment") or {}).get("hardware") or {}).get("cpu"),
           "text": f"{len(record['runs'])} seeds x {model['epochs']} epochs on a CPU, MiniLM without the visual branch"
                   + (", F1 still rising in the last epoch" if rising else "")}
    return {k: v for k, v in out.items() if v is not None}


def unit_statistics(line_overlap: float, line_gap: float) -> dict[str, Any]:
    """How the label-free lines relate to the annotated segments (word-level, per split); reads FUNSD."""
    from replications.mmlayout.boxes import group_lines
    from replications.mmlayout.data import load

    out = {}
    for split, forms in load().items():
        lines = segs = pure = split_segs = words = 0
        for f in forms:
            line = group_lines(np.asarray(f.boxes), line_overlap, line_gap)
            seg = np.asarray(f.segments)
            lines += int(line.max()) + 1 if len(line) else 0
            segs += len(set(seg.tolist()))
            words += len(seg)
            pure += sum(len(set(seg[line == k].tolist())) == 1 for k in range(int(line.max()) + 1 if len(line) else 0))
            split_segs += sum(len(set(line[seg == s].tolist())) > 1 for s in set(seg.tolist()))
        out[split] = {"forms": len(forms), "words": words, "lines": lines, "segments": segs,
                      "lines_within_one_segment": pure / max(lines, 1), "segments_over_several_lines": split_segs / max(segs, 1)}
    return out
