"""The suite's one status vocabulary, and the one place a status is computed from numbers.

A table number is ``reproduced`` / ``not reproduced`` against a reference of a named kind (or has ``no
reference``). A claim that is not one number (a speed-up, a direction, "no loss") is ``supported`` /
``contradicted`` / ``inconclusive`` by the interval of its measured effect, ``mechanism shown`` where only the
mechanism can be exercised here, ``not testable here`` with the reason, or ``not run`` when its evidence is
missing. Pages, result files, the index and the terminal all print these strings and no others.
"""

from __future__ import annotations

import math

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
NO_REFERENCE = "no reference"
SUPPORTED = "supported"
CONTRADICTED = "contradicted"
INCONCLUSIVE = "inconclusive"
MECHANISM_SHOWN = "mechanism shown"
NOT_TESTABLE = "not testable here"
NOT_RUN = "not run"

NUMBER_STATUSES = (REPRODUCED, NOT_REPRODUCED, NO_REFERENCE)
CLAIM_STATUSES = (SUPPORTED, CONTRADICTED, INCONCLUSIVE, MECHANISM_SHOWN, NOT_TESTABLE, NOT_RUN)
STATUSES = NUMBER_STATUSES + CLAIM_STATUSES
# Good news, bad news, neither: the colour a status gets on every page.
TONE = {REPRODUCED: "good", SUPPORTED: "good", MECHANISM_SHOWN: "good",
        NOT_REPRODUCED: "bad", CONTRADICTED: "bad",
        INCONCLUSIVE: "neutral", NO_REFERENCE: "neutral", NOT_TESTABLE: "neutral", NOT_RUN: "neutral"}


def checked(status: str) -> str:
    """``status`` if it is in the vocabulary; else a ValueError naming the valid ones."""
    if status not in STATUSES:
        raise ValueError(f"unknown status '{status}'; valid: {', '.join(STATUSES)}")
    return status


def number_status(mean: float, reference: float | None, tolerance: float | None) -> tuple[str, float | None]:
    """(status, mean - reference) of a reproduced number: reproduced within ``tolerance`` (absolute, in the
    metric's own units). Without a known reference there is nothing to judge; a known reference always comes
    with a tolerance (shared.reference.load_paper refuses a paper file that lacks one)."""
    if reference is None:
        return NO_REFERENCE, None
    if tolerance is None:
        raise ValueError("a known reference needs a tolerance to be judged against")
    diff = mean - reference
    return (REPRODUCED if abs(diff) <= tolerance else NOT_REPRODUCED), diff


def direction_status(low: float, high: float, *, claimed: str = "positive", margin: float = 0.0) -> str:
    """A directional claim judged on the interval [low, high] of its measured effect.

    ``claimed="positive"``: the claim says the effect is above ``margin`` (e.g. a speed-up minus 1, a gain):
    supported when the whole interval lies above it, contradicted when the whole interval lies at or below it,
    else inconclusive. ``"negative"`` mirrors it. ``"none"`` is a no-loss claim (e.g. "no loss of accuracy",
    with the effect signed so that positive is a loss): supported when the whole interval lies at or below
    ``margin`` (any loss is smaller than the margin), contradicted when it lies wholly above it (a loss bigger
    than the margin), else inconclusive.
    """
    if any(math.isnan(v) for v in (low, high)) or low > high:
        return INCONCLUSIVE
    if claimed == "negative":
        return direction_status(-high, -low, claimed="positive", margin=margin)
    if claimed == "positive":
        return SUPPORTED if low > margin else CONTRADICTED if high <= margin else INCONCLUSIVE
    if claimed == "none":
        return SUPPORTED if high <= margin else CONTRADICTED if low > margin else INCONCLUSIVE
    raise ValueError(f"claimed must be 'positive', 'negative' or 'none', got '{claimed}'")


def sign_status(effects: list[float], *, claimed: str = "positive") -> str:
    """A direction judged by its sign in every repeat (no interval is possible with few repeats): supported
    when every effect has the claimed sign, contradicted when every one has the other, else inconclusive."""
    if not effects:
        return NOT_RUN
    sign = 1 if claimed == "positive" else -1
    if all(sign * e > 0 for e in effects):
        return SUPPORTED
    if all(sign * e < 0 for e in effects):
        return CONTRADICTED
    return INCONCLUSIVE
