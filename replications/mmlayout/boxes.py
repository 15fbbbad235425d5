"""Word boxes: LayoutLM's 0-1000 normalisation and a label-free grouping of words into text lines.

The line grouping is the coarse-grained unit of the mmLayout arm. It sees only word boxes (never labels or the
annotated segments): two words share a line when they overlap vertically by at least `min_overlap` of the
smaller height and the horizontal gap between them is at most `max_gap` times the form's median word height;
lines are the connected components of that relation. The two thresholds are our choice, fixed before any run
(conf/model/mmlayout/funsd.yaml); an OCR line detector would play the same role.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

SCALE = 1000  # LayoutLM: coordinates as integers in [0, 1000] of the page width / height


def normalise(box: Sequence[float], width: int, height: int) -> tuple[int, int, int, int]:
    """(x0, y0, x1, y1) in pixels -> integers in [0, 1000], corners ordered and clipped to the page."""
    if width <= 0 or height <= 0:
        raise ValueError(f"page size must be positive, got {width} x {height}")
    x0, y0, x1, y1 = (float(v) for v in box)
    x0, x1 = sorted((x0, x1))
    y0, y1 = sorted((y0, y1))

    def scale(v: float, size: int) -> int:
        return int(min(max(round(SCALE * v / size), 0), SCALE))

    return scale(x0, width), scale(y0, height), scale(x1, width), scale(y1, height)


def group_lines(boxes: np.ndarray, min_overlap: float = 0.5, max_gap: float = 1.0) -> np.ndarray:
    """Line id per word (0..L-1, numbered in order of each line's first word) from (N, 4) boxes."""
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    n = len(boxes)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    x0, y0, x1, y1 = boxes.T
    h = np.maximum(y1 - y0, 1e-6)
    overlap = np.minimum(y1[:, None], y1[None]) - np.maximum(y0[:, None], y0[None])
    same_row = overlap >= min_overlap * np.minimum(h[:, None], h[None])
    gap = np.maximum(x0[None] - x1[:, None], x0[:, None] - x1[None])  # < 0 when the boxes overlap horizontally
    linked = same_row & (gap <= max_gap * float(np.median(h)))
    parent = np.arange(n)

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in zip(*np.nonzero(np.triu(linked, 1))):
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)
    roots = np.array([find(i) for i in range(n)])
    _, first = np.unique(roots, return_index=True)
    order = {int(roots[f]): k for k, f in enumerate(sorted(first))}
    return np.array([order[int(r)] for r in roots], dtype=np.int64)
