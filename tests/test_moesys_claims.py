"""MoESys's claim specs (paper.yaml) load and judge the committed records (results/moesys, read only) the way the
page shows them: the four DeepSpeed / UFO claims not testable with the claim's scale as the fact sheet states it, the
two mechanisms shown (measures.py) with the model they ran on. Effects and intervals are those of
results/moesys/claims.json before the claims moved to paper.yaml."""

from __future__ import annotations

import pytest

from replications.moesys import report
from shared.claims import load_claims
from shared.paths import REPO_ROOT
from shared.report.paper_hook import load_paper_results

NOT_TESTABLE = ("not testable here", None, None)
# id: (status, effect, interval rounded to 4 digits)
WANT = {
    "train_throughput": NOT_TESTABLE,
    "inference_throughput": NOT_TESTABLE,
    "ufo_unbalanced": NOT_TESTABLE,
    "ufo_wallclock": NOT_TESTABLE,
    "ring_memory": ("mechanism shown", 1.3745, (1.3074, 1.5439)),
    "elastic_training": ("mechanism shown", 0.0, None),
}


def test_the_specs_load_with_short_sentences_and_the_claims_scale():
    specs = load_claims(report.PAPER)
    assert [s.id for s in specs] == list(WANT)
    assert all(s.claim_scale.get("text") for s in specs)
    wallclock = next(s for s in specs if s.id == "ufo_wallclock")
    assert wallclock.claim_scale["params"] == 1.2e10 and wallclock.claim_scale["hardware"] == "48 x A100"


@pytest.fixture(scope="module")
def page():
    return report.build(load_paper_results(REPO_ROOT / "results", "moesys"))


def test_the_committed_records_judged_as_the_page_shows(page):
    got = {c.id: (c.display_status, None if c.effect is None else round(c.effect, 4),
                  None if c.interval is None else tuple(round(x, 4) for x in c.interval)) for c in page.claims}
    assert got == WANT
    found = {c.id: c for c in page.claims}
    ring, elastic = found["ring_memory"], found["elastic_training"]
    assert ring.evidence.startswith("1.37 [1.31, 1.54] x (range, n = 5)") and "sign test p = 0.031" in ring.evidence
    assert ring.reached_scale["params"] == 75_793_536 and ring.scale_ratio is None  # the paper states no size
    assert elastic.effect == pytest.approx(7.152557373046875e-07)
    assert elastic.evidence.startswith("+7.2e-07 nats (n = 1)") and "world sizes 2 -> 1 -> 2" in elastic.evidence
    assert elastic.reached_scale["steps"] == 60 and "not tested" in elastic.caveat
