"""Run one engine over a dataset: predictions, protocol scores, latency statistics and the per-image details
(returned, never written: they go into the run's record, see replications/ppocrv3/__init__.py).

Three views of one run are scored under the same RRC rules:
- standard (unsuffixed metrics): what the released pipeline outputs, PP-OCR's recognised text lines;
  `test_box_*` is box matching of those output lines, `test_e2e_*` needs the text too;
- `test_detector_*`: every box the detector returned, before recognition and the score filter (detector quality);
- `*_wordsplit`: output lines cut into words by split_words (our addition, not the released pipeline).
"""

from __future__ import annotations

import os
import platform
from importlib import metadata
from typing import Any

import cv2
import datasets
import numpy as np
from omegaconf import DictConfig

from replications.ocr.engines import Output
from replications.ppocrv3 import bootstrap
from replications.ppocrv3 import data as pdata
from replications.ppocrv3.protocol import Counts, Regions, exact_text_match, rrc_text_match, score_image, summarise
from shared import progress

TEXT_RULES = {"rrc": rrc_text_match, "exact": exact_text_match}


def threads() -> int:
    """Inference threads: $PPOCR_THREADS, else 1 (one core per engine keeps timings comparable here)."""
    return int(os.environ.get("PPOCR_THREADS", "1"))


def read_image(path: str) -> np.ndarray:
    img = cv2.imread(path, cv2.IMREAD_COLOR)  # FUNSD's grayscale PNGs become 3-channel, as PP-OCR expects
    if img is None:
        raise ValueError(f"could not decode image {path}")
    return img


def latency_stats(seconds: list[float], prefix: str) -> dict[str, float]:
    ms = 1000 * np.asarray(seconds)
    return {f"{prefix}latency_ms_median": float(np.median(ms)), f"{prefix}latency_ms_p90": float(np.percentile(ms, 90))}


def to_json(out: Output) -> dict[str, Any]:
    return {"words": [[p.round(1).tolist(), t] for p, t in zip(out.words.polygons, out.words.texts)],
            "lines": [[p.round(1).tolist(), t] for p, t in zip(out.lines.polygons, out.lines.texts)]}


VIEWS = ("lines", "detector", "words")  # standard, raw detector, word split


def views(out: Output) -> dict[str, Regions]:
    return {"lines": out.lines, "detector": out.detector if out.detector is not None else out.lines,
            "words": out.words}


def view_metrics(view: str, counts: Counts) -> dict[str, float]:
    """Metric names that say what was scored (see the module docstring)."""
    m = {k.replace("test_det_", "test_box_"): v for k, v in summarise(counts).items()}
    if view == "lines":
        return m
    if view == "detector":
        return {k.replace("test_box_", "test_detector_"): v for k, v in m.items() if k.startswith("test_box_")}
    return {f"{k}_wordsplit": v for k, v in m.items()}


def intervals(cfg: DictConfig, per_image: dict[str, list[list[int]]]) -> dict[str, float]:
    """Bootstrap-over-images 95% intervals of the end-to-end Hmean (standard and word split)."""
    boot = cfg.paper.protocol.bootstrap
    out = {}
    for view, suffix in (("lines", ""), ("words", "_wordsplit")):
        lo, hi = bootstrap.hmean_ci(per_image[view], "e2e_matched", boot.samples, boot.seed, boot.level)
        out[f"test_e2e_hmean{suffix}_ci_low"], out[f"test_e2e_hmean{suffix}_ci_high"] = lo, hi
    return out


def measure(cfg: DictConfig, engine: Any, ds: datasets.Dataset) -> tuple[dict[str, float], dict[str, Any]]:
    """(metrics, details) of one engine over ``ds``: details hold what the page needs per image (the four RRC
    counts of each view, for the paired bootstrap; the example images' outputs; threads, CPU, engine)."""
    rule = TEXT_RULES[cfg.dataset.text_match]
    proto = cfg.paper.protocol
    totals = {v: Counts() for v in VIEWS}
    per_image: dict[str, list[list[int]]] = {v: [] for v in VIEWS}
    timings: dict[str, list[float]] = {}
    examples = {}
    wanted = set(cfg.dataset.example_images)
    engine(read_image(ds[0]["image_path"]))  # warm-up call (session/graph initialisation), not timed
    for row in progress.bar(ds, desc=f"{cfg.dataset.name} images", unit="image"):
        out = engine(read_image(row["image_path"]))
        gt = pdata.regions(row)
        for view, regions in views(out).items():
            c = score_image(gt, regions, rule, proto.iou_threshold, proto.area_precision)
            totals[view] += c
            per_image[view].append([getattr(c, f) for f in bootstrap.FIELDS])
        for stage, sec in out.seconds.items():
            timings.setdefault(stage, []).append(sec)
        if row["image_id"] in wanted:
            examples[row["image_id"]] = to_json(out)
    metrics: dict[str, float] = {}
    for view in VIEWS:
        metrics |= view_metrics(view, totals[view])
    metrics |= intervals(cfg, per_image)
    metrics |= latency_stats(timings["pipeline"], "")
    for stage in ("det", "rec"):
        if stage in timings:
            metrics |= latency_stats(timings[stage], f"{stage}_")
    details = {"dataset": cfg.dataset.name, "model": cfg.model.name, "images": len(ds),
               "image_ids": list(ds["image_id"]), "count_fields": list(bootstrap.FIELDS),
               "counts": {v: vars(totals[v]) for v in VIEWS}, "per_image": per_image,
               "threads": threads(), "cpu": platform.processor() or platform.machine(),
               "engine": describe(engine), "examples": examples}
    return metrics, details


def describe(engine: Any) -> dict[str, Any]:
    if hasattr(engine, "version"):
        return {"kind": "tesseract", "version": engine.version(), "psm": engine.psm, "lang": engine.lang}
    out = {"kind": "ppocr", "onnxruntime": metadata.version("onnxruntime"),
           "rapidocr_onnxruntime": metadata.version("rapidocr-onnxruntime")}
    d = getattr(engine, "det_input", None)  # absent on test doubles
    if d is not None:
        out["det_input"] = {"limit_side_len": d.limit_side_len, "limit_type": d.limit_type, "mean": list(d.mean),
                            "std": list(d.std)}
    return out
