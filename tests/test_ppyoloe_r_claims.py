"""PP-YOLOE-R's claim specs (paper.yaml) load and judge the committed records (results/ppyoloe_r, read only) the way
the page shows them: two paired differences of test mAP by seed (alternative minus the paper's setting), each with
the scale reached (our s model, 8.02M params) beside the claim's (DOTA-v1.0; s for ProbIoU, l for the DFL ablation).
Effects and intervals are those of results/ppyoloe_r/claims.json before the claims moved to paper.yaml."""

from __future__ import annotations

import pytest

from replications.ppyoloe_r import report
from shared.claims import load_claims
from shared.paths import REPO_ROOT
from shared.report.paper_hook import load_paper_results

# id: (status, effect, interval rounded to 4 digits)
WANT = {
    "probiou_vs_smoothl1": ("inconclusive", -0.1671, (-0.8846, 0.5504)),
    "dfl_vs_direct_angle": ("inconclusive", -0.6008, (-3.235, 2.0334)),
}


def test_the_specs_load_with_the_claims_scale():
    specs = load_claims(report.PAPER)
    assert [s.id for s in specs] == list(WANT)
    assert [s.arms for s in specs] == [["ppyoloe_r_smoothl1", "ppyoloe_r"], ["ppyoloe_r_direct_angle", "ppyoloe_r"]]
    assert all(s.claim_scale["dataset"] == "DOTA-v1.0" and s.judge["claimed"] == "negative" for s in specs)
    assert [s.claim_scale["params"] for s in specs] == [8.09e6, 53.29e6]


def test_the_committed_records_judged_as_the_page_shows():
    page = report.build(load_paper_results(REPO_ROOT / "results", "ppyoloe_r"))
    got = {c.id: (c.display_status, round(c.effect, 4), tuple(round(x, 4) for x in c.interval)) for c in page.claims}
    assert got == WANT
    probiou, dfl = page.claims
    assert probiou.short == "ProbIoU loss gives higher mAP than smooth-L1 (synthetic_rotated)"
    assert dfl.evidence.startswith("-0.601 [-3.23, +2.03] mAP (95% t, n = 3)")
    assert dfl.reached_scale["params"] == 8_024_900 and dfl.reached_scale["steps"] == 800
    assert dfl.scale_ratio == pytest.approx(8_024_900 / 53.29e6) and not dfl.scale_note  # not far below: no note
    assert dfl.scale.startswith("s model from scratch, 800 steps of batch 8, procedural 128-px images")
    table = next(b for b in page.blocks if not isinstance(b, str))
    assert [r[4] for r in table.rows] == ["", "-0.17 [-0.88, +0.55]", "-0.60 [-3.23, +2.03]"]
    assert any("below this run's resolution (± 2.63)" in b for b in page.blocks if isinstance(b, str))
