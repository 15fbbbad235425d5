"""A claim spec's measure for "the suite matches the authors' code": the official-code record of a dataset
(results/<paper>/<dataset>/official.json, ``make official-<paper>``) paired seed by seed with the suite's record of
the spec's first arm; the second arm names the official side (``arms: [<model>, official]``). Where seed s means the
same split and draws on both sides is the paper's to say (a ``requires:`` precondition, or its notes)."""

from __future__ import annotations

from typing import Any

from shared.claims.spec import ClaimSpec
from shared.official.compare import per_seed
from shared.records import OFFICIAL_NAME
from shared.report.paper_hook import PaperResults


def pairs(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, dict[Any, float]] | str:
    """{suite arm: {seed: value}, official arm: {seed: value}} of judge.metric; a 'not run' reason where a side is
    missing (with the command that makes it)."""
    suite_arm, official_arm = spec.arms
    official, suite = results.side_file(f"{dataset}/{OFFICIAL_NAME}"), results.record(dataset, suite_arm)
    if official is None:
        return f"no official-code record: make official-{spec.paper} dataset={dataset}"
    if suite is None:
        return f"no record of {suite_arm} on {dataset}: make replicate-{spec.paper} dataset={dataset}"
    metric = spec.judge["metric"]
    return {suite_arm: per_seed(suite, metric), official_arm: per_seed(official, metric)}
