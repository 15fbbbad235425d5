"""REP's claim specs (paper.yaml) load and judge the committed records as the page shows them."""

from __future__ import annotations

import pytest

from replications.rep.report import PAPER
from shared.claims import judge_paper, load_claims
from shared.paths import RESULTS
from shared.report.paper_hook import load_paper_results


def test_specs_judge_the_committed_records() -> None:
    verdicts = judge_paper(load_claims(PAPER, "rep"), load_paper_results(RESULTS, "rep"))
    assert [(v.id, v.status) for v in verdicts] == [("improves_or_maintains", "supported"), ("wikikg2_gain", "not run"),
                                                    ("ote_time", "not testable here")]
    kept = verdicts[0]  # shown by DistMult on FB15k-237, the lowest of the 4 converged bases' intervals
    assert kept.effect == pytest.approx(-0.000559, abs=1e-6) and kept.n == 20466
    assert kept.interval == pytest.approx((-0.00125, 0.000133), abs=1e-6)
    assert "4 converged base(s)" in kept.evidence and kept.scale["text"] == "1 of 3 seeds; toy bases not judged"
