"""The official devkit's test path for large images: split into overlapping patches, detect per patch,
shift back and merge with polygon NMS (`ImgSplit_multi_process.py`, `ResultMerge_multi_process.py`).

Patches of `size` with `gap` overlap (slide = size - gap), the last one in each direction pushed back to end
at the image border, padded with zeros to size x size; named `<image>__<rate>__<left>___<up>`. An object goes
to a patch whole when it lies fully inside it, clipped and marked difficult when more than 70% of its area
does (the clipped part's minimum rotated rectangle, where the devkit approximates the clipped polygon by
four of its points). Merging keeps, per image and class, detections by greedy polygon NMS at IoU 0.1.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from shapely.geometry import Polygon, box

from replications.ppyoloe_r.boxes import polygon_iou
from replications.ppyoloe_r.dota_eval import Objects

NMS_IOU = 0.1  # ResultMerge nms_thresh
HALF_IOU = 0.7  # ImgSplit thresh
NAME = re.compile(r"^(?P<image>.+)__(?P<rate>[\d.]+)__(?P<left>\d+)___(?P<up>\d+)$")


@dataclass
class Patch:
    name: str
    left: int
    up: int
    image: np.ndarray | None  # [size, size, C], zero-padded; None when split without pixels
    objects: Objects


def windows(width: int, height: int, size: int = 1024, gap: int = 200) -> list[tuple[int, int]]:
    """(left, up) of every patch, in the devkit's order (columns outer, rows inner)."""
    slide = size - gap
    out, left = [], 0
    while left < width:
        left = max(width - size, 0) if left + size >= width else left
        up = 0
        while up < height:
            up = max(height - size, 0) if up + size >= height else up
            out.append((left, up))
            if up + size >= height:
                break
            up += slide
        if left + size >= width:
            break
        left += slide
    return out


def _clip_to_rect(poly: Polygon) -> np.ndarray:
    rect = poly.minimum_rotated_rectangle
    return np.asarray(rect.exterior.coords)[:4].reshape(8)


def split(name: str, objects: Objects, width: int, height: int, image: np.ndarray | None = None,
          size: int = 1024, gap: int = 200, rate: float = 1.0) -> list[Patch]:
    patches = []
    for left, up in windows(width, height, size, gap):
        right, down = min(left + size, width - 1), min(up + size, height - 1)
        window = box(left, up, right, down)
        polys, classes, difficult = [], [], []
        for p, c, d in zip(objects.polys, objects.classes, objects.difficult):
            g = Polygon(p.reshape(4, 2))
            if not g.is_valid:
                g = g.buffer(0)
            if g.area <= 0:
                continue
            inter = g.intersection(window)
            frac = inter.area / g.area
            if frac >= 1.0 - 1e-9:
                polys.append(p - np.tile([left, up], 4))
                classes.append(c)
                difficult.append(d)
            elif frac > HALF_IOU:
                polys.append(_clip_to_rect(inter) - np.tile([left, up], 4))
                classes.append(c)
                difficult.append(True)  # the devkit writes difficult '2' for cut objects
        crop = None
        if image is not None:
            crop = np.zeros((size, size) + image.shape[2:], dtype=image.dtype)
            part = image[up:up + size, left:left + size]
            crop[:part.shape[0], :part.shape[1]] = part
        rate_s = f"{rate:g}"
        patches.append(Patch(f"{name}__{rate_s}__{left}___{up}", left, up, crop,
                             Objects(np.array(polys).reshape(-1, 8), classes, difficult)))
    return patches


def poly_nms(polys: np.ndarray, scores: np.ndarray, iou: float = NMS_IOU) -> list[int]:
    """Greedy NMS on polygons (devkit py_cpu_nms_poly): keep the best, drop every other with IoU > iou.
    Polygon IoU only for pairs whose enclosing boxes overlap (the others have IoU 0 and are kept)."""
    polys = np.asarray(polys, dtype=float).reshape(-1, 8)
    lo = np.stack([polys[:, 0::2].min(1), polys[:, 1::2].min(1)], 1)
    hi = np.stack([polys[:, 0::2].max(1), polys[:, 1::2].max(1)], 1)
    order = np.argsort(-np.asarray(scores), kind="stable")
    keep = []
    while len(order):
        i, rest = order[0], order[1:]
        keep.append(int(i))
        near = ((np.minimum(hi[rest], hi[i]) >= np.maximum(lo[rest], lo[i])).all(1))
        drop = np.zeros(len(rest), dtype=bool)
        for k in np.flatnonzero(near):
            drop[k] = polygon_iou(polys[i], polys[rest[k]]) > iou
        order = rest[~drop]
    return keep


def merge(patch_dets: dict[str, list[tuple[str, float, np.ndarray]]],
          iou: float = NMS_IOU) -> dict[str, list[tuple[str, float, np.ndarray]]]:
    """Per class: (patch name, score, polygon in patch pixels) -> (image, score, polygon in image pixels),
    NMS per image."""
    out: dict[str, list] = {}
    for cls, dets in patch_dets.items():
        by_image: dict[str, list] = defaultdict(list)
        for patch, score, poly in dets:
            m = NAME.match(patch)
            if m is None:
                raise ValueError(f"patch name {patch!r} is not <image>__<rate>__<left>___<up>")
            shift = np.tile([int(m["left"]), int(m["up"])], 4)
            by_image[m["image"]].append((score, (np.asarray(poly, float) + shift) / float(m["rate"])))
        merged = []
        for image, items in by_image.items():
            polys = np.array([p for _, p in items])
            scores = np.array([s for s, _ in items])
            merged += [(image, float(scores[k]), polys[k]) for k in poly_nms(polys, scores, iou)]
        out[cls] = merged
    return out
