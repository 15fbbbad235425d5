"""A procedurally generated rotated-object dataset (no downloads): the ablation's training and test data.

Five classes on a textured background, each drawn as a filled rotated rectangle with a class-specific
marking; two are near-square (aspect 1.0-1.15), where (w, h, theta) is nearly ambiguous and a loss on the
raw parameters meets the boundary problem that ProbIoU avoids. Everything follows one numpy generator
seeded per split, so the same config gives the same images bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from PIL import Image, ImageDraw
from shapely.geometry import Polygon

from replications.ppyoloe_r.boxes import fold_angle

# name: (aspect range w/h, colour RGB, marking)
CLASSES = {
    "vehicle": ((2.2, 3.0), (60, 60, 70), "stripe"),      # elongated, a light band at one end
    "court": ((1.6, 2.0), (70, 150, 80), "midline"),      # a white line across the middle
    "plane": ((1.0, 1.3), (210, 210, 215), "cross"),       # fuselage and wings inside the box
    "tank": ((1.0, 1.15), (190, 180, 150), "ring"),        # near-square, a darker inner square
    "pool": ((1.0, 1.15), (40, 120, 210), "plain"),        # near-square, uniform
}
CLASS_NAMES = tuple(CLASSES)


@dataclass
class RotatedSet:
    images: torch.Tensor  # [N, 3, S, S] uint8
    boxes: list[torch.Tensor]  # per image [n, 5] (x, y, w, h, theta in [0, pi/2))
    labels: list[torch.Tensor]  # per image [n] long
    classes: tuple[str, ...] = CLASS_NAMES

    def __len__(self) -> int:
        return self.images.shape[0]

    def item(self, i: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.images[i], self.boxes[i], self.labels[i]


def _background(rng: np.random.Generator, size: int) -> Image.Image:
    coarse = rng.uniform(70, 150, (size // 16 + 1, size // 16 + 1, 3)).astype(np.uint8)
    base = np.asarray(Image.fromarray(coarse).resize((size, size), Image.BILINEAR), dtype=np.float32)
    base += rng.normal(0, 8, base.shape)
    return Image.fromarray(base.clip(0, 255).astype(np.uint8))


def _poly(cx: float, cy: float, w: float, h: float, a: float) -> list[tuple[float, float]]:
    """Corners in the order of boxes.corners (numpy here: called per drawn shape)."""
    c, s = math.cos(a) * 0.5, math.sin(a) * 0.5
    wx, wy, hx, hy = c * w, s * w, -s * h, c * h
    return [(cx + wx + hx, cy + wy + hy), (cx - wx + hx, cy - wy + hy), (cx - wx - hx, cy - wy - hy),
            (cx + wx - hx, cy + wy - hy)]


def _draw(draw: ImageDraw.ImageDraw, rng: np.random.Generator, cls: str, box: tuple[float, ...]) -> None:
    _, colour, mark = CLASSES[cls]
    cx, cy, w, h, a = box
    jitter = rng.integers(-20, 21, 3)
    fill = tuple(int(np.clip(c + j, 0, 255)) for c, j in zip(colour, jitter))
    draw.polygon(_poly(*box), fill=fill)
    c, s = math.cos(a), math.sin(a)
    if mark == "stripe":  # band over the last fifth of the length: the front of the vehicle
        off = 0.4 * w
        draw.polygon(_poly(cx + off * c, cy + off * s, 0.2 * w, h, a), fill=(200, 200, 190))
    elif mark == "midline":
        draw.polygon(_poly(cx, cy, max(1.0, 0.06 * w), h, a), fill=(240, 240, 240))
    elif mark == "cross":  # fuselage along w, wings along h, on a darker plate
        draw.polygon(_poly(*box), fill=(90, 95, 100))
        draw.polygon(_poly(cx, cy, w, 0.25 * h, a), fill=fill)
        draw.polygon(_poly(cx + 0.1 * w * c, cy + 0.1 * w * s, 0.22 * w, h, a), fill=fill)
    elif mark == "ring":
        draw.polygon(_poly(cx, cy, 0.55 * w, 0.55 * h, a), fill=tuple(int(v * 0.6) for v in fill))


def generate(n: int, size: int, seed: int, objects: tuple[int, int] = (2, 7),
             scale: tuple[float, float] = (0.10, 0.32)) -> RotatedSet:
    """`n` images of size x size; per image objects[0]..objects[1] non-overlapping objects whose longer side
    is scale x size."""
    rng = np.random.default_rng(seed)
    images, all_boxes, all_labels = [], [], []
    for _ in range(n):
        img = _background(rng, size)
        draw = ImageDraw.Draw(img)
        placed: list[Polygon] = []
        boxes, labels = [], []
        for _ in range(int(rng.integers(objects[0], objects[1] + 1))):
            for _try in range(20):
                k = int(rng.integers(len(CLASS_NAMES)))
                (lo, hi), _, _ = CLASSES[CLASS_NAMES[k]]
                long = rng.uniform(*scale) * size
                aspect = rng.uniform(lo, hi)
                w, h = long, long / aspect
                a = rng.uniform(0, math.pi)
                cx, cy = rng.uniform(0.5 * long, size - 0.5 * long, 2)
                poly = Polygon(_poly(cx, cy, w, h, a))
                if poly.bounds[0] < 0 or poly.bounds[1] < 0 or poly.bounds[2] > size or poly.bounds[3] > size:
                    continue
                if any(poly.intersects(p) for p in placed):
                    continue
                placed.append(poly)
                _draw(draw, rng, CLASS_NAMES[k], (cx, cy, w, h, a))
                boxes.append([cx, cy, w, h, a])
                labels.append(k)
                break
        arr = np.asarray(img, dtype=np.float32) + rng.normal(0, 4, (size, size, 3))
        images.append(torch.from_numpy(arr.clip(0, 255).astype(np.uint8)).permute(2, 0, 1))
        b = torch.tensor(boxes, dtype=torch.float32).reshape(-1, 5)
        all_boxes.append(fold_angle(b))
        all_labels.append(torch.tensor(labels, dtype=torch.long))
    return RotatedSet(torch.stack(images), all_boxes, all_labels)
