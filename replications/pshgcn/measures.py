"""PSHGCN's paper-specific part of its claim specs (paper.yaml ``claims:``, judged by shared.claims): the official
code's record (results/<d>/official.json, ``make official-pshgcn``) paired seed by seed with the suite's PSHGCN.
Seed s is the official seed s on both sides: the same validation split and the RNG draws in hgb/main.py's order
(paper.yaml notes; tests/test_pshgcn_seed_order.py)."""

from __future__ import annotations

from typing import Any

from shared.claims import ClaimSpec
from shared.official.compare import per_seed
from shared.paper_report import PaperResults
from shared.records import OFFICIAL_NAME


def official_pairs(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, dict[Any, float]] | str:
    """{suite arm: {seed: value}, "official": {seed: value}} of judge.metric; a reason where a side is missing."""
    suite_arm, official_arm = spec.arms
    official, suite = results.side_file(f"{dataset}/{OFFICIAL_NAME}"), results.record(dataset, suite_arm)
    if official is None:
        return f"no official-code record: make official-pshgcn dataset={dataset}"
    if suite is None:
        return f"no record of {suite_arm} on {dataset}: make replicate-pshgcn dataset={dataset}"
    metric = spec.judge["metric"]
    return {suite_arm: per_seed(suite, metric), official_arm: per_seed(official, metric)}
