"""DOTA Task 1 (oriented boxes) evaluation, as the official devkit's `dota_evaluation_task1.py`.

Per class, detections sorted by score; each matches the ground truth (same image, same class) of highest
polygon IoU when that IoU is > 0.5: a difficult ground truth makes it neither TP nor FP, an already matched
one makes it a FP. AP is the VOC-2007 11-point interpolation; mAP the mean over classes. Polygon IoU by
shapely instead of the devkit's SWIG extension (whose axis-aligned pre-filter only skips pairs of IoU 0).
Numbers are percent.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from replications.ppyoloe_r.boxes import polygon_iou

DOTA_V1_CLASSES = ("plane", "baseball-diamond", "bridge", "ground-track-field", "small-vehicle", "large-vehicle",
                   "ship", "tennis-court", "basketball-court", "storage-tank", "soccer-ball-field", "roundabout",
                   "harbor", "swimming-pool", "helicopter")


@dataclass
class Objects:
    """One image's oriented objects: polygons [n, 8], class names, difficult flags."""

    polys: np.ndarray
    classes: list[str]
    difficult: list[bool] = field(default_factory=list)

    def __post_init__(self):
        self.polys = np.asarray(self.polys, dtype=float).reshape(-1, 8)
        if not self.difficult:
            self.difficult = [False] * len(self.classes)
        if not (len(self.polys) == len(self.classes) == len(self.difficult)):
            raise ValueError(f"{len(self.polys)} polygons, {len(self.classes)} classes, {len(self.difficult)} flags")


def parse_label_text(text: str, source: str = "label file") -> Objects:
    """A DOTA labelTxt file: optional `imagesource:` / `gsd:` header, then `x1 y1 ... x4 y4 class difficult`."""
    polys, classes, difficult = [], [], []
    for n, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts or line.startswith(("imagesource", "gsd")):
            continue
        if len(parts) < 9:
            raise ValueError(f"{source} line {n}: expected 8 coordinates and a class, got {line!r}")
        try:
            polys.append([float(v) for v in parts[:8]])
        except ValueError as exc:
            raise ValueError(f"{source} line {n}: non-numeric coordinate in {line!r}") from exc
        classes.append(parts[8])
        difficult.append(len(parts) > 9 and parts[9] != "0")
    return Objects(np.array(polys).reshape(-1, 8), classes, difficult)


def voc07_ap(rec: np.ndarray, prec: np.ndarray) -> float:
    """11-point interpolated AP: mean over t in {0, 0.1, ..., 1} of max precision at recall >= t."""
    ap = 0.0
    for t in np.arange(0.0, 1.1, 0.1):
        ap += (float(np.max(prec[rec >= t])) if np.any(rec >= t) else 0.0) / 11.0
    return ap


def class_ap(gt: dict[str, Objects], dets: list[tuple[str, float, np.ndarray]], cls: str,
             iou_threshold: float = 0.5) -> tuple[float, int]:
    """(AP in [0, 1], number of non-difficult ground truths) of one class; AP is nan without ground truth."""
    records = {}
    npos = 0
    for image, objs in gt.items():
        keep = [i for i, c in enumerate(objs.classes) if c == cls]
        polys = objs.polys[keep]
        diff = np.array([objs.difficult[i] for i in keep], dtype=bool)
        hbb = np.concatenate([polys[:, 0::2].min(1, keepdims=True), polys[:, 1::2].min(1, keepdims=True),
                              polys[:, 0::2].max(1, keepdims=True), polys[:, 1::2].max(1, keepdims=True)], 1)
        records[image] = (polys, diff, np.zeros(len(keep), dtype=bool), hbb.reshape(-1, 4))
        npos += int((~diff).sum())
    if npos == 0:
        return float("nan"), 0
    order = sorted(range(len(dets)), key=lambda i: -dets[i][1])  # stable: ties keep input order
    tp, fp = np.zeros(len(order)), np.zeros(len(order))
    for d, i in enumerate(order):
        image, _, poly = dets[i]
        if image not in records or len(records[image][0]) == 0:
            fp[d] = 1
            continue
        polys, diff, used, hbb = records[image]
        # the devkit's axis-aligned pre-filter: polygon IoU only where the enclosing boxes overlap
        overlap = ((np.minimum(hbb[:, 2], poly[0::2].max()) >= np.maximum(hbb[:, 0], poly[0::2].min()))
                   & (np.minimum(hbb[:, 3], poly[1::2].max()) >= np.maximum(hbb[:, 1], poly[1::2].min())))
        ious = np.zeros(len(polys))
        for j in np.flatnonzero(overlap):
            ious[j] = polygon_iou(poly, polys[j])
        j = int(ious.argmax())
        if ious[j] > iou_threshold:
            if diff[j]:
                continue
            if not used[j]:
                used[j] = True
                tp[d] = 1
            else:
                fp[d] = 1
        else:
            fp[d] = 1
    tp, fp = np.cumsum(tp), np.cumsum(fp)
    rec = tp / npos
    prec = tp / np.maximum(tp + fp, np.finfo(np.float64).eps)
    return voc07_ap(rec, prec), npos


def evaluate(gt: dict[str, Objects], dets: dict[str, list[tuple[str, float, np.ndarray]]],
             classes: tuple[str, ...] | list[str], iou_threshold: float = 0.5) -> dict[str, float]:
    """{"map": mean AP (percent) over classes with ground truth, "ap/<class>": ..., "classes_scored": n}.

    `dets[cls]` lists (image id, score, polygon of 8 numbers). On DOTA every class of the 15 has ground
    truth; a class without any (possible on a few example images) is left out of the mean and reported nan."""
    out: dict[str, float] = {}
    aps = []
    for cls in classes:
        ap, _ = class_ap(gt, dets.get(cls, []), cls, iou_threshold)
        out[f"ap/{cls}"] = 100.0 * ap
        if not np.isnan(ap):
            aps.append(ap)
    out["map"] = 100.0 * float(np.mean(aps)) if aps else float("nan")
    out["classes_scored"] = float(len(aps))
    return out


def as_detections(objs: dict[str, Objects], score: float = 1.0) -> dict[str, list[tuple[str, float, np.ndarray]]]:
    """Ground truth written as detections (every object, difficult ones too), grouped by class."""
    dets: dict[str, list] = defaultdict(list)
    for image, o in objs.items():
        for p, c in zip(o.polys, o.classes):
            dets[c].append((image, score, p))
    return dict(dets)
