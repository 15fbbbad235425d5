"""Detector input as PaddleOCR's inference pipeline builds it (tools/infer/predict_det.py for DB models):
DetResizeForTest (type 0: scale so the limited side meets `limit_side_len`, then round each side to a multiple
of 32, at least 32) -> NormalizeImage (x / 255, minus mean, over std, per channel of the BGR image as cv2 reads
it) -> CHW, batch of one. Kept here rather than in rapidocr because rapidocr 1.4.4 hard-codes mean = std = 0.5
and replaces a "max" limit with its own 960/1500/2000 ladder, neither of which PaddleOCR does."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

IMAGENET_MEAN = (0.485, 0.456, 0.406)  # PaddleOCR predict_det.py NormalizeImage
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class DetInput:
    limit_side_len: int
    limit_type: str  # "max": longest side at most limit; "min": shortest side at least limit
    mean: Sequence[float]
    std: Sequence[float]

    def __post_init__(self) -> None:
        if self.limit_type not in ("max", "min"):
            raise ValueError(f"limit_type must be 'max' or 'min', got '{self.limit_type}'")
        if len(self.mean) != 3 or len(self.std) != 3:
            raise ValueError("mean and std need one value per channel")

    def size(self, h: int, w: int) -> tuple[int, int]:
        """(height, width) the detector sees for an h x w image."""
        if self.limit_type == "max":
            ratio = self.limit_side_len / max(h, w) if max(h, w) > self.limit_side_len else 1.0
        else:
            ratio = self.limit_side_len / min(h, w) if min(h, w) < self.limit_side_len else 1.0
        return (max(int(round(int(h * ratio) / 32) * 32), 32), max(int(round(int(w * ratio) / 32) * 32), 32))

    def __call__(self, img: np.ndarray) -> np.ndarray:
        rh, rw = self.size(*img.shape[:2])
        x = cv2.resize(img, (rw, rh)).astype(np.float32) / 255.0
        x = (x - np.asarray(self.mean, np.float32)) / np.asarray(self.std, np.float32)
        return x.transpose(2, 0, 1)[None].astype(np.float32)
