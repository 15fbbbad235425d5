"""Imbalance and fluctuation of recorded expert loads (FlexMoE's premise: both persist during training).

loads: [steps, E] routed token-expert choices per step (one MoE layer, summed over sources).
- imbalance per step: max_e / mean_e load (1 = balanced);
- windows of `window` consecutive steps; a window's load vector is its mean share per expert;
- fluctuation between consecutive windows: total-variation distance (half the L1 distance of the share
  vectors, 0 = identical, 1 = disjoint) and Spearman's rank correlation of the experts' loads (1 = same order);
- the sampling-noise floor of that distance: two windows drawn as multinomials of the same number of choices
  from one fixed share vector (their pooled share), mean over draws. Tokens of one sequence are not independent,
  so the true floor is somewhat higher: observed / floor near 1 means "no change beyond noise".
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def windows(loads: np.ndarray, window: int) -> np.ndarray:
    """[n_windows, E] mean load per expert over consecutive, non-overlapping windows (a short tail is dropped)."""
    loads = np.asarray(loads, dtype=float)
    n = loads.shape[0] // window
    if n < 1:
        raise ValueError(f"{loads.shape[0]} steps are fewer than one window of {window}")
    return loads[: n * window].reshape(n, window, -1).mean(1)


def shares(vectors: np.ndarray) -> np.ndarray:
    v = np.asarray(vectors, dtype=float)
    return v / v.sum(-1, keepdims=True)


def tv_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Total-variation distance between load vectors (normalised to shares) along the last axis."""
    return 0.5 * np.abs(shares(a) - shares(b)).sum(-1)


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    rho = stats.spearmanr(a, b).statistic
    return float(rho) if np.isfinite(rho) else float("nan")  # constant vectors have no rank order


def noise_floor(w: np.ndarray, choices_per_window: int, draws: int = 200, seed: int = 0) -> float:
    """Mean TV distance between consecutive windows if every pair were two multinomial draws of
    `choices_per_window` choices from the pair's pooled share vector."""
    rng = np.random.default_rng(seed)
    s = shares(w)
    out = []
    for a, b in zip(s[:-1], s[1:]):
        p = (a + b) / 2
        x = rng.multinomial(choices_per_window, p, size=draws)
        y = rng.multinomial(choices_per_window, p, size=draws)
        out.append(tv_distance(x, y).mean())
    return float(np.mean(out))


def summarise(loads: np.ndarray, window: int, lag_windows: int = 5) -> dict[str, float]:
    """Per-layer statistics of one run's trace (see the module docstring)."""
    loads = np.asarray(loads, dtype=float)
    per_step = loads.max(-1) / loads.mean(-1)
    half = loads.shape[0] // 2
    w = windows(loads, window)
    tv = tv_distance(w[:-1], w[1:])
    rho = [spearman(a, b) for a, b in zip(w[:-1], w[1:])]
    lagged = [spearman(a, b) for a, b in zip(w[:-lag_windows], w[lag_windows:])] if len(w) > lag_windows else []
    choices = int(round(loads.sum(-1).mean() * window))
    floor = noise_floor(w, choices)
    return {"imbalance_mean": float(per_step.mean()), "imbalance_first_half": float(per_step[:half].mean()),
            "imbalance_second_half": float(per_step[half:].mean()), "imbalance_max": float(per_step.max()),
            "window_imbalance_mean": float((w.max(-1) / w.mean(-1)).mean()),
            "tv_consecutive": float(tv.mean()), "tv_consecutive_second_half": float(tv[len(tv) // 2:].mean()),
            "tv_noise_floor": floor, "tv_over_noise": float(tv.mean() / floor),
            "spearman_consecutive": float(np.nanmean(rho)),
            "spearman_lagged": float(np.nanmean(lagged)) if lagged else float("nan"),
            "hot_expert_changes": int((w.argmax(-1)[1:] != w.argmax(-1)[:-1]).sum()),
            "windows": int(len(w))}
