"""PP-OCRv3's paper-specific parts of its claim specs (paper.yaml ``claims:``, judged by shared.claims, kind
``measured``): the end-to-end Hmean difference over images, the latency ratio, and the scale they were reached at.

Why measures and not library kinds: Hmean is a corpus-level ratio of summed RRC counts, so its paired bootstrap
resamples images and recomputes both engines' Hmean from the sums (replications/ppocrv3/bootstrap.py), which is not
the mean of per-unit differences that the library's paired_bootstrap takes; and the latency is one median per
engine (the interleaved benchmark's side file or the main run), a single ratio with no spread, judged against the
spec's threshold.
"""

from __future__ import annotations

from typing import Any

from replications.ocr.details import run_details
from replications.ppocrv3 import bootstrap
from shared.claims import ClaimSpec
from shared.report.paper_hook import PaperResults
from shared.verdict import CONTRADICTED, SUPPORTED, direction_status

INTERLEAVED = "latency_interleaved.json"  # replications/ppocrv3/bench.py
DATASETS = ("icdar2015", "funsd")
VIEWS = {"lines": "standard protocol", "words": "word-split protocol"}
DEFAULT_BOOTSTRAP = {"samples": 10000, "seed": 0, "level": 0.95}
# The released models' sizes as the official doc states them (det + cls + rec); the suite runs those weights.
PARAMS = {"ppocrv3": 15.6e6, "ppocrv2": 11.6e6}


def load_details(results: PaperResults) -> dict[str, dict[str, dict[str, Any]]]:
    """dataset -> model -> details with the record's metrics; a run without per-image counts is left out."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for ds, model, details, record in run_details(results):
        if ds in DATASETS and "per_image" in details:  # without per-image counts it cannot be bootstrapped
            out.setdefault(ds, {})[model] = {**details, "metrics": record["runs"][0]["metrics"]}
    return out


def bootstrap_settings(results: PaperResults) -> dict[str, Any]:
    """The bootstrap the runs were made with (their records' config), else conf/paper/ppocrv3.yaml's defaults."""
    for record in results.records.values():
        boot = ((record.get("config") or {}).get("paper", {}).get("protocol") or {}).get("bootstrap")
        if boot:
            return dict(boot)
    return dict(DEFAULT_BOOTSTRAP)


def difference(rows: dict[str, dict], newer: str, older: str, view: str, boot: dict[str, Any]) -> dict[str, Any] | None:
    """Hmean(newer) - Hmean(older) end to end in points, its paired-bootstrap interval over images, and both Hmeans;
    None when one engine was not measured."""
    if newer not in rows or older not in rows:
        return None
    diff, low, high = bootstrap.paired_difference(rows[newer]["per_image"][view], rows[older]["per_image"][view],
                                                  "e2e_matched", boot["samples"], boot["seed"], boot["level"])
    key = "test_e2e_hmean" + ("_wordsplit" if view == "words" else "")
    return {"diff": diff, "low": low, "high": high, "n": len(rows[newer]["per_image"][view]), "level": boot["level"],
            "newer": rows[newer]["metrics"][key], "older": rows[older]["metrics"][key]}


def hmean_difference(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, Any] | str:
    """The verdict's parts: supported when the whole paired-bootstrap interval of the difference lies above 0."""
    newer, older = spec.arms
    view = spec.judge.get("options", {}).get("view", "lines")
    c = difference(load_details(results).get(dataset or "", {}), newer, older, view, bootstrap_settings(results))
    if c is None:
        return f"{newer} or {older} not measured on {dataset}: make replicate-ppocrv3 dataset={dataset}"
    return {"status": direction_status(c["low"], c["high"], claimed="positive"), "effect": c["diff"], "low": c["low"],
            "high": c["high"], "n": c["n"], "method": "bootstrap",
            "rule": f"{newer} - {older}, paired bootstrap over images ({VIEWS[view]}): difference > 0",
            "evidence": f"end-to-end Hmean {c['newer']:.1f} vs {c['older']:.1f}"}


def latencies(results: PaperResults, dataset: str, arms: list[str]) -> tuple[dict[str, float], str] | None:
    """Median pipeline latency of each arm and where it comes from: the interleaved benchmark when it covers every
    arm (same images in rotation, so the same load), else the main run; None when an arm has neither."""
    timed = (((results.side_file(INTERLEAVED) or {}).get("datasets") or {}).get(dataset) or {}).get("latency") or {}
    if all(a in timed for a in arms):
        return {a: timed[a]["latency_ms_median"] for a in arms}, "interleaved benchmark"
    records = [results.record(dataset, a) for a in arms]
    if any(r is None or not r.get("runs") for r in records):
        return None
    return {a: r["runs"][0]["metrics"]["latency_ms_median"] for a, r in zip(arms, records)}, "main run"


def latency_ratio(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, Any] | str:
    """Median latency of arm / baseline against judge.threshold: supported within it, contradicted beyond it (one
    measurement of each engine: a ratio without spread)."""
    newer, older = spec.arms
    found = latencies(results, dataset or "", spec.arms)
    if found is None:
        return f"{newer} or {older} not timed on {dataset}: make replicate-ppocrv3 dataset={dataset}"
    ms, where = found
    ratio, limit = ms[newer] / ms[older], float(spec.judge["threshold"])
    words = "slower" if ratio > 1 else "faster"
    return {"status": SUPPORTED if ratio <= limit else CONTRADICTED, "effect": ratio, "n": 1,
            "rule": f"median pipeline latency {newer} / {older} <= {limit:g} (our 'comparable speed')",
            "evidence": f"{words}: {ratio:.2f}x the latency ({ms[newer]:.0f} vs {ms[older]:.0f} ms, {where})"}


def scale(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, Any]:
    """The released weights (the paper's own models) on the public test set, on this CPU with the run's threads; a
    speed claim on the interleaved benchmark's machine when that timed it."""
    rows = load_details(results).get(dataset or "", {})
    arm = rows.get(spec.arms[0]) if spec.arms else None
    if arm is None:
        return {"dataset": dataset} if dataset else {}
    hardware = ((results.record(dataset, spec.arms[0]) or {}).get("environment") or {}).get("hardware", {}).get("cpu")
    threads, images = arm.get("threads"), arm.get("images")
    found = latencies(results, dataset or "", spec.arms) if spec.id.endswith("speed") else None
    if found and found[1] == "interleaved benchmark":
        inter = results.side_file(INTERLEAVED) or {}
        hardware = ((inter.get("environment") or {}).get("hardware") or {}).get("cpu", hardware)
        threads, images = inter.get("threads", threads), inter["datasets"][dataset]["images"]
    out = {"params": PARAMS.get(spec.arms[0]), "dataset": dataset,
           "hardware": f"{hardware}, {threads} thread{'s' if threads != 1 else ''}" if hardware else None,
           "text": f"released {spec.arms[0]} weights, {images} {dataset} test images"}
    return {k: v for k, v in out.items() if v is not None}
