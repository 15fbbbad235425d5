"""Run the released models over a dataset: scores, latency and per-item details (returned, never written: they
go into the run's record, see replications/ppstructurev2/__init__.py).

Table recognition (PubTabNet): SLANet's structure, then PP-OCR boxes and text matched into its cells.
- test_acc: structure exact match (the paper's "Acc"), with a Wilson 95 % interval over tables;
- test_teds_struct: TEDS on structure only; test_teds: end to end with the OCR's text (the paper's TEDS, which
  used a table-specific OCR pair not obtainable here: the OCR used is named in the config and result file);
- test_teds_oracle: the ground-truth cell contents placed through the predicted structure in cell order, so
  only structure errors cost (equal to 100 for a table whose structure is exact);
- *_simple / *_complex: PubTabNet's split (complex = any spanning cell).
Layout (PubLayNet example pages): CDLA PicoDet detections, latency per page, and a cross-dataset box recall
(never comparable to the paper's PubLayNet mAP).
"""

from __future__ import annotations

import math
import os
import platform
import time
from importlib import metadata
from typing import Any

import cv2
import numpy as np
from omegaconf import DictConfig

from replications.ppstructurev2 import slanet
from replications.ppstructurev2.teds import teds
from shared.progress import bar


def threads() -> int:
    """Inference threads: $PPOCR_THREADS, else 1 (the same variable the PP-OCR package reads)."""
    return int(os.environ.get("PPOCR_THREADS", "1"))


def read_image(path: str) -> np.ndarray:
    img = cv2.imread(path, cv2.IMREAD_COLOR)
    if img is None:
        raise ValueError(f"could not decode image {path}")
    return img


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a proportion, in percent."""
    if n == 0:
        return 0.0, 100.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return 100 * max(0.0, centre - half), 100 * min(1.0, centre + half)


def latency(prefix: str, seconds: list[float]) -> dict[str, float]:
    ms = 1000 * np.asarray(seconds)
    return {f"{prefix}latency_ms_mean": float(ms.mean()), f"{prefix}latency_ms_median": float(np.median(ms))}


def _mean(rows: list[dict], key: str, kind: str | None = None) -> float:
    vals = [r[key] for r in rows if kind is None or r["type"] == kind]
    return 100 * float(np.mean(vals)) if vals else float("nan")


def measure_tables(cfg: DictConfig, models: dict[str, Any], ds) -> tuple[dict[str, float], dict[str, Any]]:
    net, ocr = models["structure"], models["ocr"]
    first = read_image(ds[0]["image_path"])
    net(first), slanet.table_ocr(ocr, first)  # warm-up (session initialisation), not timed
    rows, examples = [], {}
    wanted = set(cfg.dataset.get("example_items", []))
    for item in bar(ds, desc=f"{cfg.dataset.name} tables", unit="table", total=len(ds)):
        img = read_image(item["image_path"])
        t0, c0 = time.perf_counter(), time.process_time()
        structure = net(img)
        t1, c1 = time.perf_counter(), time.process_time()
        ocr_out = slanet.table_ocr(ocr, img)
        t2 = time.perf_counter()
        pred_html = slanet.fill(structure, ocr_out.boxes, ocr_out.texts)
        t3, c3 = time.perf_counter(), time.process_time()
        _, gt_cells = slanet.structure_of_html(item["html"])
        row = {
            "image_id": item["image_id"], "type": item["type"], "exact": structure.tokens == list(item["structure"]),
            "teds": teds(pred_html, item["html"]),
            "teds_struct": teds(slanet.to_html(structure.tokens), item["html"], structure_only=True),
            "teds_oracle": teds(slanet.to_html(structure.tokens, gt_cells), item["html"]),
            "tokens_pred": len(structure.tokens), "tokens_true": len(item["structure"]),
            "cells_pred": int(len(structure.boxes)), "ocr_boxes": int(len(ocr_out.boxes)),
            "seconds": {"structure": t1 - t0, "ocr": t2 - t1, "match": t3 - t2, "pipeline": t3 - t0},
            "cpu_seconds": {"structure": c1 - c0, "pipeline": c3 - c0},
        }
        rows.append(row)
        if item["image_id"] in wanted:
            examples[item["image_id"]] = {"pred_html": pred_html, "true_html": item["html"],
                                          "tokens": structure.tokens, "cell_boxes": structure.boxes.round(1).tolist()}
    n, exact = len(rows), sum(r["exact"] for r in rows)
    lo, hi = wilson(exact, n)
    metrics = {"test_acc": 100 * exact / n, "test_acc_ci_low": lo, "test_acc_ci_high": hi,
               "test_teds": _mean(rows, "teds"), "test_teds_struct": _mean(rows, "teds_struct"),
               "test_teds_oracle": _mean(rows, "teds_oracle")}
    for kind in ("simple", "complex"):
        sub = [r for r in rows if r["type"] == kind]
        if sub:
            metrics[f"test_acc_{kind}"] = 100 * sum(r["exact"] for r in sub) / len(sub)
            metrics[f"test_teds_{kind}"] = _mean(rows, "teds", kind)
            metrics[f"test_teds_struct_{kind}"] = _mean(rows, "teds_struct", kind)
    metrics |= latency("", [r["seconds"]["pipeline"] for r in rows])
    metrics |= latency("structure_", [r["seconds"]["structure"] for r in rows])
    metrics |= latency("ocr_", [r["seconds"]["ocr"] for r in rows])
    # CPU time of this process per table: with one inference thread it is what an idle core would take, and it is
    # robust to other jobs sharing the machine (wall time above is not).
    metrics |= latency("cpu_", [r["cpu_seconds"]["pipeline"] for r in rows])
    metrics |= latency("structure_cpu_", [r["cpu_seconds"]["structure"] for r in rows])
    return metrics, {"task": "table", "dataset": cfg.dataset.name, "model": cfg.model.name, "tables": n, "rows": rows,
                     "threads": threads(), "cpu": platform.processor() or platform.machine(),
                     "ocr": {"version": cfg.model.ocr.version, "note": cfg.model.ocr.note}, "versions": versions(),
                     "examples": examples}


# ---- layout -------------------------------------------------------------------------------------------------

# CDLA classes that name the same thing as a PubLayNet class (PubLayNet's `list` has no CDLA counterpart).
CDLA_TO_PUBLAYNET = {"text": "text", "title": "title", "table": "table", "figure": "figure"}


def box_iou(a: list[float], b: list[float]) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def recall_at(gt: list[tuple[str, list[float]]], dets: list[tuple[str, list[float]]], thr: float) -> tuple[int, int]:
    """(matched, total) ground-truth boxes of mapped classes, one-to-one greedy by IoU, same mapped class."""
    used, matched, total = set(), 0, 0
    for label, box in gt:
        if label not in CDLA_TO_PUBLAYNET.values():
            continue
        total += 1
        best, best_iou = None, thr
        for k, (dl, db) in enumerate(dets):
            if k in used or CDLA_TO_PUBLAYNET.get(dl) != label:
                continue
            v = box_iou(box, db)
            if v >= best_iou:
                best, best_iou = k, v
        if best is not None:
            used.add(best)
            matched += 1
    return matched, total


def measure_layout(cfg: DictConfig, detector: Any, ds) -> tuple[dict[str, float], dict[str, Any]]:
    detector(read_image(ds[0]["image_path"]))  # warm-up, not timed
    rows, seconds, cpu, hit, total = [], [], [], 0, 0
    for item in bar(ds, desc=f"{cfg.dataset.name} pages", unit="page", total=len(ds)):
        img = read_image(item["image_path"])
        c0 = time.process_time()
        dets, sec = detector(img)
        cpu.append(time.process_time() - c0)
        seconds.append(sec)
        gt = [(lab, [b[0], b[1], b[0] + b[2], b[1] + b[3]]) for lab, b in zip(item["labels"], item["boxes"])]
        m, t = recall_at(gt, [(d.label, list(d.box)) for d in dets], 0.5)
        hit, total = hit + m, total + t
        rows.append({"image_id": item["image_id"], "seconds": sec, "cpu_seconds": cpu[-1],
                     "detections": [{"label": d.label, "score": round(d.score, 4), "box": [round(v, 1) for v in d.box]}
                                    for d in dets], "gt": [{"label": lab, "box": b} for lab, b in gt]})
    metrics = latency("", seconds) | latency("cpu_", cpu) | {
        "detections_per_page": float(np.mean([len(r["detections"]) for r in rows])),
        "crossdataset_box_recall50": 100 * hit / total if total else float("nan"),
    }
    return metrics, {"task": "layout", "dataset": cfg.dataset.name, "model": cfg.model.name, "pages": len(rows),
                     "rows": rows, "threads": threads(), "cpu": platform.processor() or platform.machine(),
                     "architecture": detector.arch, "versions": versions()}


def versions() -> dict[str, str]:
    out = {}
    for pkg in ("onnxruntime", "rapidocr-onnxruntime", "apted", "lxml", "opencv-python"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "absent"
    return out
