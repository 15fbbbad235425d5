"""How a verdict reads, the same on the page, in claims.json, in the index and in the terminal: the effect with
its interval (one unit: no spread printed), a censored effect as a bound, and the scale beside the claim's."""

from __future__ import annotations

import math
from typing import Any

FAR_BELOW = 1e-2  # a verdict reached below 1/100 of the claim's parameters reads "at <scale> (claim: <scale>)"


def number(x: float, digits: int = 3, signed: bool = True) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "nan"
    return f"{x:+.{digits}g}" if signed else f"{x:.{digits}g}"


def effect_text(effect: float | None, low: float | None, high: float | None, n: int, unit: str = "",
                method: str = "t", digits: int = 3, censored_steps: int | None = None, signed: bool = True) -> str:
    """'+0.063 [+0.039, +0.088] nats (95% t, n = 3)'; 'n = 1' without a spread; a censored speed-up as
    'not reached in 2000 steps (<= 1.00x)'."""
    if effect is None or n == 0:
        return "no measurement"
    unit_text = f" {unit}" if unit else ""
    if censored_steps is not None:
        return f"not reached in {censored_steps} steps (<= {effect:.2f}x)"
    if n < 2 or low is None or high is None or math.isnan(low) or math.isnan(high):
        return f"{number(effect, digits, signed)}{unit_text} (n = {n})"
    what = {"t": "95% t", "bootstrap": "95% bootstrap", "range": "range"}.get(method, method)
    return (f"{number(effect, digits, signed)} [{number(low, digits, signed)}, {number(high, digits, signed)}]"
            f"{unit_text} ({what}, n = {n})")


def params_text(value: float | None) -> str:
    """1.5e9 -> '1.5B', 8.1e5 -> '0.81M'."""
    if value is None:
        return "?"
    for size, name in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if value >= size or (name == "M" and value >= 1e5):
            return f"{value / size:.2g}{name}" if value / size < 10 else f"{value / size:.0f}{name}"
    return f"{value:.0f}"


def scale_ratio(reached: dict[str, Any], claimed: dict[str, Any]) -> float | None:
    """Reached / claimed parameters (active ones where both give them), None where either is unknown."""
    for key in ("active_params", "params"):
        r, c = reached.get(key), claimed.get(key)
        if isinstance(r, (int, float)) and isinstance(c, (int, float)) and c > 0:
            return float(r) / float(c)
    return None


def scale_note(reached: dict[str, Any], claimed: dict[str, Any]) -> str:
    """'at 0.81M params (claim: 1.5B)' where the verdict was reached far below the claim's scale, else ''."""
    ratio = scale_ratio(reached, claimed)
    if ratio is None or ratio >= FAR_BELOW:
        return ""
    key = "active_params" if reached.get("active_params") and claimed.get("active_params") else "params"
    return f"at {params_text(reached.get(key))} params (claim: {params_text(claimed.get(key))})"


def status_text(status: str, note: str) -> str:
    """The status word, with the scale it was reached at where that is far below the claim's."""
    return f"{status} {note}" if note else status
