"""Aggregate per-seed metrics: mean, std, n and a 95% confidence interval (Student t); and the two pieces
every bootstrap here is built from (resampling indices, a percentile interval)."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def summarize(values: list[float]) -> dict[str, float]:
    arr = np.asarray(values, dtype=np.float64)
    n = len(arr)
    mean = float(arr.mean())
    # Sample std (ddof=1), the suite's one convention: the CI below, every paper's report (mmlayout, evomoe,
    # ta_moe, flexmoe, ppyoloe_r) and the results pages use it. The HGB papers (pshgcn, gaga) print the population
    # std (np.sqrt(np.var(...)), ddof=0): their reported stds are sqrt((n-1)/n) of ours for the same numbers;
    # statuses compare means only. One seed has no spread to estimate: std 0 as before (the pages print n=1
    # beside it, and plot no bar), CI NaN.
    if n > 1:
        std = float(arr.std(ddof=1))
        half = float(stats.t.ppf(0.975, n - 1)) * std / math.sqrt(n)
    else:
        std, half = 0.0, float("nan")
    return {"mean": mean, "std": std, "n": n, "ci95_low": mean - half, "ci95_high": mean + half}


def aggregate(per_seed: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    names = per_seed[0].keys()
    return {name: summarize([run[name] for run in per_seed]) for name in names}


def resample_indices(n: int, samples: int, seed: int) -> np.ndarray:
    """(samples, n) indices drawn with replacement: one bootstrap replicate per row, seeded."""
    return np.random.default_rng(seed).integers(0, n, size=(samples, n))


def percentile_interval(values: np.ndarray, level: float) -> tuple[float, float]:
    """The central `level` percentile interval of bootstrap replicates."""
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(values, [tail, 100 - tail])
    return float(lo), float(hi)
