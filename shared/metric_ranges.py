"""Which values a metric can take, by its name, and which metrics are timings.

A stored number outside its metric's range (a micro-F1 of 150, an AUC of 1.3 on a fraction scale that this
suite does not use for AUC, a negative perplexity) is a bug in the code that produced it, never a result:
``check_record`` raises naming the file, when the runner stores a record and when the report reads one.

Units follow the papers' paper.yaml files: F1, precision, recall, accuracy, AUC, AP/mAP, H-mean and TEDS are
percent (gaga, pshgcn, mmlayout, ppocrv3, ppstructurev2, ppyoloe_r); MRR and Hits@k are fractions (rep, as OGB
prints them); a fraction-scale F1 (0.9) still lies in [0, 100], so only impossible values are caught, not a
unit mix-up. Differences (``_delta``, ``diff``) are signed and unchecked; a NaN is a metric undefined on its
data (e.g. a CER with no text) and passes. Rules are tried in order; the first whose pattern matches a name
decides; a name no rule matches is unchecked.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

INF = math.inf
# Rounding slack at a bound: a perfect AP computed as 100 * (a sum of fractions) can store 100.00000000000003.
SLACK = 1e-9
# (pattern on the metric name, low, high, what the range is)
RULES: tuple[tuple[str, float, float, str], ...] = (
    (r"(^|_)(delta|diff)(_|$)|_diff_", -INF, INF, "a signed difference"),
    (r"(^|_)(mrr|hits\d+)(_|$)", 0.0, 1.0, "a fraction (MRR, Hits@k)"),
    (r"(^|_)fraction(_|$)", 0.0, INF, "a fraction or ratio, never negative"),
    (r"(^|_)(f1|acc|accuracy|auc|ap|map|precision|recall\d*|hmean|teds)(_|$)", 0.0, 100.0,
     "a percent-scale score"),
    (r"(^|_)cer(_|$)", 0.0, INF, "an error rate in percent (insertions can take it past 100)"),
    (r"(^|_)(ppl|perplexity)(_|$)", 1.0, INF, "a perplexity (exp of a cross-entropy, >= 1)"),
    (r"(^|_)mr(_|$)", 1.0, INF, "a mean rank (ranks start at 1)"),
    (r"(^|_)entropy(_|$)", 0.0, INF, "an entropy"),
    (r"latency|seconds|per_s(_|$)|throughput|(^|_)ms(_|$)", 0.0, INF, "a timing or rate"),
)

# Metrics that measure the machine, not the code: a re-run on another machine (or the same one, later) differs
# by design. Wall-clock latencies, rates, all-to-all times (HetuMoE's a2a_ms_*) and numbers derived only from
# timings (a speedup, "faster in every repeat", a throughput relative to another one).
TIMING = re.compile(r"latency|seconds|tokens_per_s|per_s(_|$)|throughput|(^|_)ms(_|$)|speedup|faster|_of_resident")


def is_timing(name: str) -> bool:
    return bool(TIMING.search(name))


def range_of(name: str) -> tuple[float, float, str] | None:
    """(low, high, what) of the first rule matching ``name``; None when no rule knows it."""
    for pattern, low, high, what in RULES:
        if re.search(pattern, name):
            return low, high, what
    return None


def out_of_range(metrics: dict[str, Any]) -> list[str]:
    """One line per metric whose value lies outside its range (empty: all fine)."""
    bad = []
    for name, value in metrics.items():
        known = range_of(name)
        if known is None or not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
            continue
        low, high, what = known
        if not low - SLACK * max(1.0, abs(low)) <= value <= high + SLACK * max(1.0, abs(high)):
            bad.append(f"{name} = {value!r} is outside [{low:g}, {high:g}] ({what})")
    return bad


class MetricRangeError(ValueError):
    """A stored metric lies outside the range its name implies."""


def check_record(record: dict[str, Any], path: Path | str) -> None:
    """Every per-seed metric and aggregate mean of a result record within range, else MetricRangeError naming
    ``path`` and the first offending numbers."""
    bad = []
    for run in record.get("runs") or []:
        bad += [f"seed {run.get('seed')}: {line}" for line in out_of_range(run.get("metrics") or {})]
    means = {name: agg.get("mean") for name, agg in (record.get("aggregate") or {}).items() if isinstance(agg, dict)}
    bad += [f"aggregate mean: {line}" for line in out_of_range(means)]
    if bad:
        more = f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
        raise MetricRangeError(f"{path}: impossible metric value, a bug in the code that computed it: "
                               + "; ".join(bad[:3]) + more)
