"""How a claim's effect moves with model size: the slope of the effect against log10(active parameters) over the
rungs of a scale ladder (a spec's ``sizes:`` datasets), with its 95% interval, read as the
direction of the claim, never as the paper's verdict.

Each rung is one verdict of the same judge (its effect, interval, n seeds, active parameters). The slope is the
weighted least-squares fit of effect on log10(params), each rung weighted by 1 / se^2, its standard error taken back
from its own interval (half-width / the t quantile of its n - 1 degrees of freedom; 1.96 for a bootstrap). The
slope's interval uses Student's t with the rungs' pooled degrees of freedom, sum(n_i - 1), not the normal: each se
rests on few seeds; where the sizes scatter about the line more than their intervals allow (chi^2 per residual
degree of freedom above 1), the se is scaled by that dispersion and t takes the k - 2 residual degrees of freedom.
Without a spread at every rung (one seed, or a min-max range), an unweighted fit with k - 2
degrees of freedom;
two rungs or fewer: no interval.

Reading, for a claim of a positive effect (``claimed: positive``): the interval above 0 "moves toward the claim",
below 0 "moves away", straddling 0 "flat"; mirrored for a claim of a negative effect or of no loss beyond a margin
(``claimed: negative`` / ``none``: the effect must fall). A statement about these sizes only: the largest rung is
named beside the claim's own scale.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

from shared.claims.display import params_text
from shared.claims.intervals import LEVEL

TOWARD, AWAY, FLAT, UNKNOWN = "moves toward the claim", "moves away from the claim", "flat", "no trend (too few rungs)"


@dataclass(frozen=True)
class Rung:
    """One size's verdict: where it stands on the ladder and what it measured."""

    dataset: str
    params: float  # active parameters per token
    effect: float
    low: float | None
    high: float | None
    n: int
    method: str = "t"
    status: str = ""


@dataclass(frozen=True)
class Trend:
    slope: float | None  # effect per decade of active parameters
    low: float | None
    high: float | None
    reading: str
    rungs: tuple[Rung, ...]
    unit: str = ""
    claim_params: float | None = None
    intercept: float | None = None  # the fitted line: effect = intercept + slope x log10(params)
    line: float = 0.0  # what the claim is judged against: 0 (no effect), or a threshold kind's threshold

    @property
    def text(self) -> str:
        """'moves toward the claim: +0.021 [+0.004, +0.038] nats/char per 10x params, 0.11M-2.7M (claim: 1.5B)'."""
        if self.slope is None:
            return f"{self.reading}: {len(self.rungs)} size(s) measured"
        spread = (f" [{self.low:+.3g}, {self.high:+.3g}]" if self.low is not None and self.high is not None else "")
        unit = f" {self.unit}" if self.unit else ""
        sizes = f"{params_text(self.rungs[0].params)}-{params_text(self.rungs[-1].params)} params"
        claim = f" (claim: {params_text(self.claim_params)})" if self.claim_params else ""
        return f"{self.reading}: {self.slope:+.3g}{spread}{unit} per 10x params, {sizes}{claim}"

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "rungs": [asdict(r) for r in self.rungs], "text": self.text}


def standard_error(rung: Rung) -> float | None:
    """The rung's se, from its interval: half-width over the quantile that made it (None without a spread, and for
    a range, which is no confidence interval)."""
    if rung.method not in ("t", "bootstrap") or rung.n < 2 or rung.low is None or rung.high is None:
        return None
    if math.isnan(rung.low) or math.isnan(rung.high):
        return None
    quantile = 1.959964 if rung.method == "bootstrap" else float(stats.t.ppf(0.5 + LEVEL / 2, rung.n - 1))
    return max((rung.high - rung.low) / 2 / quantile, 1e-12)


def reading(low: float | None, high: float | None, claimed: str) -> str:
    if low is None or high is None:
        return UNKNOWN
    rising = "toward" if claimed == "positive" else "away"
    if low > 0:
        return TOWARD if rising == "toward" else AWAY
    if high < 0:
        return AWAY if rising == "toward" else TOWARD
    return FLAT


def fit(rungs: Sequence[Rung], claimed: str, unit: str = "", claim_params: float | None = None,
        line: float = 0.0) -> Trend:
    """The trend of ``rungs`` (any order; sorted by size) for a claim whose effect is ``claimed``."""
    ordered = tuple(sorted(rungs, key=lambda r: r.params))
    if len(ordered) < 2:
        return Trend(None, None, None, UNKNOWN, ordered, unit, claim_params, line=line)
    x = np.log10([r.params for r in ordered])
    y = np.array([r.effect for r in ordered], dtype=np.float64)
    ses = [standard_error(r) for r in ordered]
    if all(se is not None for se in ses):
        w = 1.0 / np.square(ses)
        df = sum(r.n - 1 for r in ordered)
        xm = float(np.sum(w * x) / np.sum(w))
        sxx = float(np.sum(w * (x - xm) ** 2))
        ym = float(np.sum(w * y) / np.sum(w))
        slope = float(np.sum(w * (x - xm) * (y - ym)) / sxx)
        se = math.sqrt(1.0 / sxx)
        # Sizes that scatter about the line more than their own intervals allow (chi^2 / (k - 2) > 1) say the
        # seeds' spread understates the uncertainty: scale the se by it and take the t quantile of the k - 2
        # residual degrees of freedom (multiplicative dispersion, as in meta-regression).
        dispersion = float(np.sum(w * (y - ym - slope * (x - xm)) ** 2)) / max(len(ordered) - 2, 1)
        if len(ordered) > 2 and dispersion > 1.0:
            se, df = se * math.sqrt(dispersion), len(ordered) - 2
    else:  # no spread somewhere: ordinary least squares, residual degrees of freedom
        df = len(ordered) - 2
        xm, ym = float(x.mean()), float(y.mean())
        sxx = float(np.sum((x - xm) ** 2))
        slope = float(np.sum((x - xm) * (y - ym)) / sxx)
        if df < 1:
            return Trend(slope, None, None, UNKNOWN, ordered, unit, claim_params, ym - slope * xm, line)
        residual = y - (ym + slope * (x - xm))
        se = math.sqrt(float(np.sum(residual ** 2)) / df / sxx)
    half = float(stats.t.ppf(0.5 + LEVEL / 2, df)) * se
    low, high = slope - half, slope + half
    return Trend(slope, low, high, reading(low, high, claimed), ordered, unit, claim_params, ym - slope * xm, line)
