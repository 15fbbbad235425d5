"""Uncertainty of corpus-level Hmean by resampling images (the unit the test set is drawn in).

Per image we keep the four RRC counts (care ground truth, care detections, box matches, end-to-end matches);
a bootstrap replicate sums them over images drawn with replacement and recomputes P/R/Hmean from the sums,
exactly as the point estimate is computed. Two engines scored on the same images are compared *paired*: each
replicate draws one set of images and scores both engines on it, so image difficulty cancels in the difference.
"""

from __future__ import annotations

import numpy as np

from shared.stats import percentile_interval, resample_indices

FIELDS = ("gt_care", "det_care", "det_matched", "e2e_matched")  # column order of a per-image array


def hmean(sums: np.ndarray, matched: str) -> np.ndarray:
    """Hmean in percent from summed counts (..., 4); 0 where precision + recall is 0 (RRC rule)."""
    m = sums[..., FIELDS.index(matched)].astype(float)
    gt, det = sums[..., 0].astype(float), sums[..., 1].astype(float)
    # 2PR/(P+R) = 2m/(gt+det): the same value without dividing by a zero precision or recall
    denom = gt + det
    return np.divide(200 * m, denom, out=np.zeros_like(m), where=denom > 0)


def hmean_ci(per_image: np.ndarray, matched: str = "e2e_matched", samples: int = 10000, seed: int = 0,
             level: float = 0.95) -> tuple[float, float]:
    per_image = np.asarray(per_image)
    idx = resample_indices(len(per_image), samples, seed)
    return percentile_interval(hmean(per_image[idx].sum(axis=1), matched), level)


def paired_difference(a: np.ndarray, b: np.ndarray, matched: str = "e2e_matched", samples: int = 10000,
                      seed: int = 0, level: float = 0.95) -> tuple[float, float, float]:
    """Hmean(a) - Hmean(b) in points and its paired-bootstrap interval; rows of a and b are the same images."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        raise ValueError(f"paired bootstrap needs the same images for both engines: {a.shape} vs {b.shape}")
    idx = resample_indices(len(a), samples, seed)
    diff = hmean(a[idx].sum(axis=1), matched) - hmean(b[idx].sum(axis=1), matched)
    point = float(hmean(a.sum(axis=0), matched) - hmean(b.sum(axis=0), matched))
    return (point, *percentile_interval(diff, level))
