"""The one place an effect's interval is computed: paired Student-t over units (seeds, splits), a paired bootstrap
over units (test triples, images), a bootstrap of a ratio of two independent means, and the plain range. Every
judge kind (shared.claims.kinds) takes its interval from here."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from shared.stats import percentile_interval, resample_indices

LEVEL = 0.95


@dataclass(frozen=True)
class Interval:
    """An effect with its interval over ``n`` units; ``method`` names how (t, bootstrap, range, none)."""

    effect: float
    low: float
    high: float
    n: int
    method: str

    @property
    def has_spread(self) -> bool:
        return self.n > 1 and not (math.isnan(self.low) or math.isnan(self.high))


def student_t(values: list[float] | np.ndarray, level: float = LEVEL) -> Interval:
    """Mean and Student-t interval (sample std, ddof=1); one value has no spread: NaN bounds."""
    arr = np.asarray(values, dtype=np.float64)
    n = len(arr)
    if n == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0, "t")
    mean = float(arr.mean())
    if n < 2:
        return Interval(mean, float("nan"), float("nan"), 1, "t")
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * float(arr.std(ddof=1)) / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n, "t")


def bootstrap_mean(values: list[float] | np.ndarray, replicates: int = 2000, seed: int = 0,
                   level: float = LEVEL) -> Interval:
    """Mean of paired per-unit differences and its percentile bootstrap interval (units resampled together)."""
    arr = np.asarray(values, dtype=np.float64)
    if len(arr) < 2:
        mean = float(arr.mean()) if len(arr) else float("nan")
        return Interval(mean, float("nan"), float("nan"), len(arr), "bootstrap")
    low, high = percentile_interval(arr[resample_indices(len(arr), replicates, seed)].mean(axis=1), level)
    return Interval(float(arr.mean()), low, high, len(arr), "bootstrap")


def bootstrap_ratio(numerator: list[float] | np.ndarray, denominator: list[float] | np.ndarray, replicates: int = 2000,
                    seed: int = 0, level: float = LEVEL) -> Interval:
    """mean(numerator) / mean(denominator), each arm resampled on its own (the samples are not paired)."""
    x, y = np.asarray(numerator, dtype=np.float64), np.asarray(denominator, dtype=np.float64)
    rx = x[resample_indices(len(x), replicates, seed)].mean(axis=1)
    ry = y[resample_indices(len(y), replicates, seed + 1)].mean(axis=1)
    low, high = percentile_interval(rx / ry, level)
    return Interval(float(x.mean() / y.mean()), low, high, min(len(x), len(y)), "bootstrap")


def value_range(values: list[float] | np.ndarray) -> Interval:
    """Mean and the range (min, max): for few settings where a t interval would claim too much."""
    arr = np.asarray(values, dtype=np.float64)
    if len(arr) == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0, "range")
    return Interval(float(arr.mean()), float(arr.min()), float(arr.max()), len(arr), "range")


METHODS = {"t": student_t, "bootstrap": bootstrap_mean, "range": value_range}
