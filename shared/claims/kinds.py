"""The judge kinds: each a small function from per-unit samples to (status, interval, evidence words).

Samples are what shared.claims.judge gathers for a claim: ``{arm: {unit: value}}`` (units are seeds, splits,
test triples; an arm is a model name) from the records' metric or from the spec's ``measure`` function. The
status always comes from shared.verdict; the interval from shared.claims.intervals.

| kind | effect | status |
| --- | --- | --- |
| paired_difference | mean of arm - baseline per common unit (``relative``: / baseline mean), t interval | direction vs margin |
| paired_bootstrap | the same, percentile bootstrap over the units | direction vs margin |
| ratio | mean(arm) / mean(baseline), each arm bootstrapped on its own | direction of ratio - 1 vs margin |
| threshold | mean of the arms' values (``interval``: t or range) | direction of value - threshold |
| within_tolerance | paired arm - baseline, t interval | whole interval within ±tolerance |
| steps_to_target | speed-up per unit (censored = upper bound) | direction of speed-up - 1 vs margin |
| sign | arm - baseline per unit | every unit has the claimed sign |
| measured | whatever the ``measure`` function returns (status included) | the function's |
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shared.claims.intervals import METHODS, Interval, bootstrap_mean, bootstrap_ratio, student_t, value_range
from shared.official.compare import agreement_status
from shared.verdict import INCONCLUSIVE, NOT_RUN, direction_status, sign_status

Samples = dict[str, dict[Any, float]]


@dataclass(frozen=True)
class Outcome:
    """What a kind decides: the status, the effect's interval, and the words of how (``rule``)."""

    status: str
    interval: Interval
    rule: str
    censored: bool = False  # steps_to_target: the effect is an upper bound (the target was not reached)


def _paired(samples: Samples, arms: list[str]) -> tuple[list[Any], list[float], list[float]]:
    a, b = samples[arms[0]], samples[arms[1]]
    units = sorted(set(a) & set(b), key=str)
    return units, [a[u] for u in units], [b[u] for u in units]


def _margin(judge: dict[str, Any], baseline: list[float]) -> float:
    margin = float(judge.get("margin") or 0.0)  # shared.claims.judge resolved a per-dataset margin already
    if judge.get("margin_relative_to"):
        margin *= sum(baseline) / len(baseline) if baseline else float("nan")
    return margin


def _direction(judge: dict[str, Any], interval: Interval, margin: float, offset: float = 0.0) -> str:
    if not interval.has_spread:
        return INCONCLUSIVE
    return direction_status(interval.low - offset, interval.high - offset, claimed=judge["claimed"], margin=margin)


def _claimed_words(judge: dict[str, Any], margin: float, what: str = "effect") -> str:
    negative = f"{what} < -{margin:g}" if margin else f"{what} < 0"
    return {"positive": f"{what} > {margin:g}", "negative": negative,
            "none": f"{what} <= {margin:g} (no loss beyond the margin)"}[judge["claimed"]]


def paired_difference(judge: dict[str, Any], samples: Samples) -> Outcome:
    _, a, b = _paired(samples, judge["arms"])
    diffs = [x - y for x, y in zip(a, b)]
    if judge.get("relative"):
        base = sum(b) / len(b) if b else float("nan")
        diffs = [d / base for d in diffs]
    method = judge.get("interval", "t")
    interval = bootstrap_mean(diffs, judge.get("replicates", 2000), judge.get("seed", 0)) if method == "bootstrap" \
        else METHODS[method](diffs)
    margin = _margin(judge, b)
    return Outcome(_direction(judge, interval, margin), interval,
                   f"{judge['arms'][0]} - {judge['arms'][1]}, paired by {judge.get('pairing', 'seed')}: "
                   + _claimed_words(judge, margin))


def paired_bootstrap(judge: dict[str, Any], samples: Samples) -> Outcome:
    return paired_difference({**judge, "interval": "bootstrap"}, samples)


def ratio(judge: dict[str, Any], samples: Samples) -> Outcome:
    a, b = (list(samples[arm].values()) for arm in judge["arms"])
    interval = bootstrap_ratio(a, b, judge.get("replicates", 2000), judge.get("seed", 0))
    margin = float(judge.get("margin") or 0.0)
    return Outcome(_direction(judge, interval, margin, offset=1.0), interval,
                   f"mean {judge['arms'][0]} / mean {judge['arms'][1]}: " + _claimed_words(judge, margin, "ratio - 1"))


def threshold(judge: dict[str, Any], samples: Samples) -> Outcome:
    values = [v for arm in judge["arms"] for v in samples[arm].values()]
    interval = value_range(values) if judge.get("interval") == "range" else student_t(values)
    status = _direction(judge, interval, 0.0, offset=float(judge["threshold"]))
    return Outcome(status, interval, f"{', '.join(judge['arms'])}: " + _claimed_words(
        judge, 0.0, f"value - {judge['threshold']:g}"))


def within_tolerance(judge: dict[str, Any], samples: Samples) -> Outcome:
    _, a, b = _paired(samples, judge["arms"])
    interval = student_t([x - y for x, y in zip(a, b)])
    tol = float(judge["tolerance"])
    status = agreement_status(interval.low, interval.high, tol) if interval.has_spread else NOT_RUN
    return Outcome(status, interval, f"{judge['arms'][0]} - {judge['arms'][1]} within ±{tol:g}")


def steps_to_target(judge: dict[str, Any], samples: Samples) -> Outcome:
    """``samples``: {"speedup": {unit: x}, "censored": {unit: 1.0 if the target was never reached}}; a censored
    speed-up is an upper bound, so it can contradict a claim (bound <= claimed) but never support one."""
    speedup, censored = samples["speedup"], samples.get("censored", {})
    interval = student_t(list(speedup.values())) if len(speedup) > 1 else value_range(list(speedup.values()))
    margin = float(judge.get("margin") or 0.0)
    all_censored = bool(speedup) and all(censored.get(u) for u in speedup)
    any_censored = any(censored.get(u) for u in speedup)
    if not speedup:
        status = NOT_RUN
    elif all_censored:
        bound = max(speedup.values())
        status = direction_status(bound - 1, bound - 1, claimed="positive", margin=margin)
        status = status if status != "supported" else INCONCLUSIVE
    else:
        status = _direction(judge, interval, margin, offset=1.0)
        status = INCONCLUSIVE if any_censored and status == "supported" else status
    return Outcome(status, interval, f"speed-up of {judge['arms'][0]} to {judge['arms'][1]}'s target: "
                   + _claimed_words(judge, margin, "speed-up - 1"), censored=all_censored)


def sign(judge: dict[str, Any], samples: Samples) -> Outcome:
    _, a, b = _paired(samples, judge["arms"])
    diffs = [x - y for x, y in zip(a, b)]
    return Outcome(sign_status(diffs, claimed="negative" if judge["claimed"] == "negative" else "positive"),
                   value_range(diffs), f"sign of {judge['arms'][0]} - {judge['arms'][1]} in every unit")


KINDS: dict[str, Callable[[dict[str, Any], Samples], Outcome]] = {
    "paired_difference": paired_difference, "paired_bootstrap": paired_bootstrap, "ratio": ratio,
    "threshold": threshold, "within_tolerance": within_tolerance, "steps_to_target": steps_to_target, "sign": sign,
}

