"""Rotated boxes: (x, y, w, h, theta) <-> corner polygons, the angle convention, exact rotated IoU in torch.

Convention ("oc", as PaddleDetection's rotated configs): w lies along (cos theta, sin theta), h along
(-sin theta, cos theta), image y pointing down; a box is stored with theta in [0, pi/2) after folding
(w, h, theta) == (w, h, theta + pi) == (h, w, theta + pi/2).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from shapely.geometry import Polygon


def corners(boxes: torch.Tensor) -> torch.Tensor:
    """[..., 5] -> [..., 4, 2], in the order of the official _box2corners."""
    x, y, w, h, a = boxes.unbind(-1)
    c, s = torch.cos(a) * 0.5, torch.sin(a) * 0.5
    wx, wy, hx, hy = c * w, s * w, -s * h, c * h
    pts = [(x + wx + hx, y + wy + hy), (x - wx + hx, y - wy + hy), (x - wx - hx, y - wy - hy), (x + wx - hx, y + wy - hy)]
    return torch.stack([torch.stack(p, -1) for p in pts], -2)


def fold_angle(boxes: torch.Tensor) -> torch.Tensor:
    """The same boxes with theta in [0, pi/2) (w and h swapped where a quarter turn was taken off)."""
    x, y, w, h, a = boxes.unbind(-1)
    a = torch.remainder(a, math.pi)
    swap = a >= math.pi / 2
    a = torch.where(swap, a - math.pi / 2, a)
    return torch.stack([x, y, torch.where(swap, h, w), torch.where(swap, w, h), a], -1)


def poly_to_rbox(poly: np.ndarray | list[float]) -> np.ndarray:
    """A DOTA quadrilateral (8 numbers) -> its minimum-area rectangle (x, y, w, h, theta in [0, pi/2)).

    The official prepare_data uses cv2.minAreaRect; shapely's oriented envelope is the same rectangle."""
    rect = Polygon(np.asarray(poly, dtype=float).reshape(4, 2)).minimum_rotated_rectangle
    pts = np.asarray(rect.exterior.coords)[:4]
    e1, e2 = pts[1] - pts[0], pts[2] - pts[1]
    w, h = float(np.hypot(*e1)), float(np.hypot(*e2))
    a = math.atan2(e1[1], e1[0])
    cx, cy = pts.mean(0)
    return fold_angle(torch.tensor([cx, cy, w, h, a], dtype=torch.float64)).numpy()


def points_in_boxes(points: torch.Tensor, boxes: torch.Tensor) -> torch.Tensor:
    """[L, 2] points, [B, n, 5] boxes -> [B, n, L] bool, edges included (official
    check_points_in_rotated_boxes: projections onto two adjacent edges within [0, |edge|^2])."""
    c = corners(boxes)  # [B, n, 4, 2]
    a, b, d = c[..., 0, :], c[..., 1, :], c[..., 3, :]
    ab, ad = (b - a).unsqueeze(-2), (d - a).unsqueeze(-2)
    ap = points.view(1, 1, -1, 2) - a.unsqueeze(-2)
    pab, pad = (ap * ab).sum(-1), (ap * ad).sum(-1)
    return (pab >= 0) & (pab <= (ab * ab).sum(-1)) & (pad >= 0) & (pad <= (ad * ad).sum(-1))


def _cross(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def _inside(p: torch.Tensor, poly: torch.Tensor) -> torch.Tensor:
    """p [..., k, 2] inside the convex quadrilateral poly [..., 4, 2] (either winding), edges included."""
    edges = poly.roll(-1, -2) - poly  # [..., 4, 2]
    rel = p.unsqueeze(-2) - poly.unsqueeze(-3)  # [..., k, 4, 2]
    cr = _cross(edges.unsqueeze(-3), rel)
    eps = 1e-6 * (edges.abs().amax((-1, -2), keepdim=True)[..., 0] ** 2).unsqueeze(-2) + 1e-9
    return (cr >= -eps).all(-1) | (cr <= eps).all(-1)


@torch.no_grad()
def rotated_iou(b1: torch.Tensor, b2: torch.Tensor) -> torch.Tensor:
    """Exact IoU of rotated boxes, broadcast over leading dims: [..., 5] x [..., 5] -> [...].

    The intersection of two convex quadrilaterals is the convex hull of the corners of each inside the
    other and the edge crossings (24 candidates), ordered by angle around their mean; invalid candidates
    are replaced by the first valid one so they add nothing to the shoelace sum. Used where the official
    code calls its CUDA rotated_iou_similarity (the assigner, NMS); checked against shapely in the tests."""
    p1, p2 = corners(b1.double()), corners(b2.double())
    p1, p2 = torch.broadcast_tensors(p1, p2)
    in1 = _inside(p1, p2)  # corners of 1 in 2: [..., 4]
    in2 = _inside(p2, p1)
    # edge crossings: segments p1[i]->p1[i+1] and p2[j]->p2[j+1]
    a, r = p1.unsqueeze(-2), (p1.roll(-1, -2) - p1).unsqueeze(-2)  # [..., 4, 1, 2]
    c, s = p2.unsqueeze(-3), (p2.roll(-1, -2) - p2).unsqueeze(-3)  # [..., 1, 4, 2]
    den = _cross(r, s)
    ok = den.abs() > 1e-12
    den = torch.where(ok, den, torch.ones_like(den))
    t, u = _cross(c - a, s) / den, _cross(c - a, r) / den
    cross_ok = ok & (t >= 0) & (t <= 1) & (u >= 0) & (u <= 1)
    cross_pts = (a + t.unsqueeze(-1) * r).flatten(-3, -2)  # [..., 16, 2]
    pts = torch.cat([p1, p2, cross_pts], -2)  # [..., 24, 2]
    valid = torch.cat([in1, in2, cross_ok.flatten(-2)], -1)
    n = valid.sum(-1, keepdim=True).clamp(min=1)
    center = (pts * valid.unsqueeze(-1)).sum(-2) / n
    ang = torch.atan2(pts[..., 1] - center[..., 1:2], pts[..., 0] - center[..., 0:1])
    ang = torch.where(valid, ang, torch.full_like(ang, 10.0))  # invalid last
    order = ang.argsort(-1)
    pts = torch.gather(pts, -2, order.unsqueeze(-1).expand_as(pts))
    valid = torch.gather(valid, -1, order)
    pts = torch.where(valid.unsqueeze(-1), pts, pts[..., :1, :])
    inter = 0.5 * _cross(pts, pts.roll(-1, -2)).sum(-1).abs()
    inter = torch.where(valid.sum(-1) >= 3, inter, torch.zeros_like(inter))
    area1, area2 = b1[..., 2].double() * b1[..., 3].double(), b2[..., 2].double() * b2[..., 3].double()
    union = area1 + area2 - inter
    return (inter / union.clamp(min=1e-12)).to(b1.dtype)


def polygon_iou(p: np.ndarray, q: np.ndarray) -> float:
    """IoU of two polygons (8 numbers each) with shapely (the devkit uses its SWIG polyiou extension)."""
    a, b = Polygon(np.asarray(p, float).reshape(4, 2)), Polygon(np.asarray(q, float).reshape(4, 2))
    if not a.is_valid:
        a = a.buffer(0)
    if not b.is_valid:
        b = b.buffer(0)
    inter = a.intersection(b).area
    union = a.area + b.area - inter
    return float(inter / union) if union > 0 else 0.0
