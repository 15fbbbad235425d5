"""Run one engine over a dataset: predictions, protocol scores, latency statistics, a details file."""

from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

import cv2
import datasets
import numpy as np
from omegaconf import DictConfig

from replications.ppocrv3 import data as pdata
from replications.ppocrv3.engines import Output
from replications.ppocrv3.protocol import Counts, exact_text_match, rrc_text_match, score_image, summarise
from shared.atomic import write_json_atomic

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


def evaluate(cfg: DictConfig, engine: Any, ds: datasets.Dataset, details_path: Path | None) -> dict[str, float]:
    rule = TEXT_RULES[cfg.dataset.text_match]
    words, lines = Counts(), Counts()
    timings: dict[str, list[float]] = {}
    examples = {}
    wanted = set(cfg.dataset.example_images)
    engine(read_image(ds[0]["image_path"]))  # warm-up call (session/graph initialisation), not timed
    for row in ds:
        out = engine(read_image(row["image_path"]))
        gt = pdata.regions(row)
        proto = cfg.paper.protocol
        words += score_image(gt, out.words, rule, proto.iou_threshold, proto.area_precision)
        lines += score_image(gt, out.lines, rule, proto.iou_threshold, proto.area_precision)
        for stage, sec in out.seconds.items():
            timings.setdefault(stage, []).append(sec)
        if row["image_id"] in wanted:
            examples[row["image_id"]] = to_json(out)
    metrics = summarise(words)
    metrics["test_det_hmean_lines"] = summarise(lines)["test_det_hmean"]
    metrics |= latency_stats(timings["pipeline"], "")
    for stage in ("det", "rec"):
        if stage in timings:
            metrics |= latency_stats(timings[stage], f"{stage}_")
    if details_path is not None:
        write_json_atomic(details_path, {
            "dataset": cfg.dataset.name, "model": cfg.model.name, "images": len(ds),
            "counts_words": vars(words), "counts_lines": vars(lines), "metrics": metrics,
            "threads": threads(), "cpu": platform.processor() or platform.machine(),
            "engine": describe(engine), "examples": examples,
        })
    return metrics


def describe(engine: Any) -> dict[str, Any]:
    if hasattr(engine, "version"):
        return {"kind": "tesseract", "version": engine.version(), "psm": engine.psm, "lang": engine.lang}
    return {"kind": "ppocr", "onnxruntime": metadata.version("onnxruntime"),
            "rapidocr_onnxruntime": metadata.version("rapidocr-onnxruntime")}
