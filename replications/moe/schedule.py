"""EvoMoE's Gumbel temperature schedules (official fairseq_cli/train.py ~l.292-330, fact sheet)."""

from __future__ import annotations

import math


def temperature(step: int, kind: str, t_max: float, t_min: float, decay_steps: int) -> float:
    """tau at optimiser step `step` (0-based), starting at t_max and floored at t_min.

    exponential: tau = max(t_max * exp(step * ln(t_min / t_max) / D), t_min)  (reaches t_min at step D)
    linear:      tau = max(t_max - step * (t_max - t_min) / D, t_min)
    """
    if decay_steps <= 0 or t_min <= 0 or t_max < t_min:
        raise ValueError(f"need decay_steps > 0 and 0 < t_min <= t_max; got {decay_steps}, {t_min}, {t_max}")
    if kind == "exponential":
        return max(t_max * math.exp(step * math.log(t_min / t_max) / decay_steps), t_min)
    if kind == "linear":
        return max(t_max - step * (t_max - t_min) / decay_steps, t_min)
    raise ValueError(f"unknown temperature schedule '{kind}'; valid: exponential, linear")
