"""GAGA's paper-specific parts of its claim specs (paper.yaml ``claims:``, judged by shared.claims): the official
code's runs (results/<d>/official.json, ``make official-gaga``) paired split by split with the suite's GAGA, the
healthy ones among them for F1-macro, and the precondition that seed s is split s on both sides.

Why "healthy": the official utils/metrics.py calc_ap_and_thres picks the test threshold as ``thresholds[F1.argmax()]``
over the validation PR curve with F1 = 2PR / (P + R). Where the highest-scored validation nodes are all negative,
P = R = 0 there and F1 is NaN; np.argmax returns the first NaN, so the threshold lands above every positive
validation node's score and (almost) every test node is predicted negative: F1-macro at the all-negative floor
(43.87 on Tolokers' test splits, 2298 negatives / 642 positives) while the AUC is normal. The suite counts 0/0 as
F1 = 0 (replications/gaga/metrics.py). A run below ``options.collapsed_below`` (50: what predicting a single class
scores at most) is such a collapse: its F1-macro measures the bug, not the model, and is left out.
"""

from __future__ import annotations

from typing import Any

from shared.claims import ClaimSpec, official
from shared.report.paper_hook import PaperResults

Samples = dict[str, dict[Any, float]]


def collapsed(official: dict[int, float], below: float) -> list[int]:
    """The official splits whose score is under ``below``: the NaN-argmax threshold collapse (module docstring)."""
    return sorted(s for s, value in official.items() if value < below)


def healthy_official_pairs(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> Samples | str:
    """shared.claims.official.pairs without the official runs whose threshold selection collapsed."""
    pairs = official.pairs(results, dataset, spec)
    if isinstance(pairs, str):
        return pairs
    official_arm = spec.arms[1]
    drop = collapsed(pairs[official_arm], float(spec.judge["options"]["collapsed_below"]))
    return {arm: {s: v for s, v in values.items() if s not in drop} for arm, values in pairs.items()}


def split_is_seed(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> str | None:
    """The suite's runs record the split they trained on (train.split == seed on Tolokers); the official seed s is
    split s by the adapter's construction (replications/gaga/official.py). None when seed s is split s."""
    suite = results.record(dataset, spec.arms[0]) or {}
    wrong = [r["seed"] for r in suite.get("runs") or [] if (r.get("train") or {}).get("split") != r["seed"]]
    return f"not paired: the suite's seeds {wrong} did not train on split = seed" if wrong else None
