"""EvoMoE's claim specs (paper.yaml) load and judge the committed records (results/evomoe, read only) the way the
page shows them: one verdict per named baseline and dataset, the scale reached beside the claim's 1.5B, a censored
speed-up as a bound, WikiText-2 not testable below the bigram. The floors are the committed page's numbers (no data
needed); the effects are those of results/evomoe/claims.json's evidence before the claims moved to paper.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest

from replications.evomoe import measures, report
from replications.moe import charfloor
from shared.claims import load_claims
from shared.paths import REPO_ROOT
from shared.report.paper_hook import load_paper_results

BIGRAM = {"valid_ppl": 459.7546935402852, "test_ppl": 430.7289528571674, "test_ppl_full_train": 266.7572124754768}
CHAR_FLOOR = 2.4837202444041764
AT = " at 0.81M params (claim: 1.5B)"
# id: (display status, effect, interval rounded to 4 digits)
WANT = {
    "beats_switch_wikitext2": ("not testable here at 5.4M params (claim: 1.5B)", -16.2786, (-19.4887, -13.0686)),
    "beats_base_wikitext2": ("not testable here at 5.4M params (claim: 1.5B)", -14.3975, (-30.8599, 2.0649)),
    "beats_hash_wikitext2": ("not testable here at 5.4M params (claim: 1.5B)", -80.5904, (-88.2524, -72.9284)),
    "faster_wikitext2": ("not testable here at 5.4M params (claim: 1.5B)", 1.0, (1.0, 1.0)),
    "beats_switch_chars": ("contradicted" + AT, -0.0634, (-0.0877, -0.0390)),
    "beats_base_chars": ("inconclusive" + AT, 0.0388, (-0.0271, 0.1046)),
    "beats_hash_chars": ("contradicted" + AT, -0.0683, (-0.0988, -0.0378)),
    "faster_chars": ("contradicted" + AT, 1.0, (1.0, 1.0)),
    "flops_efficiency": ("not testable here", None, None),
}


@pytest.fixture
def page(monkeypatch):
    monkeypatch.setattr(measures, "wikitext_bigram", lambda records: BIGRAM)
    monkeypatch.setattr(charfloor, "bigram_floor", lambda: CHAR_FLOOR)
    return report.build(load_paper_results(REPO_ROOT / "results", "evomoe"))


def test_the_specs_load_with_short_sentences_and_the_claims_scale():
    specs = load_claims(Path(report.PAPER))
    assert [s.id for s in specs] == list(WANT)
    assert all(s.claim_scale["active_params"] == 1.5e9 for s in specs)
    assert {s.short for s in specs if "beats" in s.id} == {f"EvoMoE reaches lower {m} than {b}" for b in
                                                          ("Switch", "BASE", "Hash") for m in ("test perplexity",
                                                                                               "validation loss")}


def test_the_committed_records_judged_as_the_page_shows(page):
    got = {c.id: (c.display_status, None if c.effect is None else round(c.effect, 4),
                  None if c.interval is None else tuple(round(x, 4) for x in c.interval)) for c in page.claims}
    assert got == WANT
    found = {c.id: c for c in page.claims}
    assert found["faster_chars"].evidence.startswith("not reached in 2000 steps (<= 1.00x)")
    assert found["faster_wikitext2"].evidence.startswith("every model is still worse than a count-based bigram of the "
                                                         "same tokens (test PPL 430.7)")
    assert "measured: not reached in 300 steps (<= 1.00x)" in found["faster_wikitext2"].evidence
    chars = found["beats_switch_chars"]
    assert chars.evidence.startswith("-0.0634 [-0.0877, -0.039] nats/char (95% t, n = 3)")
    assert (chars.reached_scale["active_params"], chars.reached_scale["params"]) == (811_904, 2_392_448)
    assert chars.reached_scale["steps"] == 2000 and chars.reached_scale["tokens"] == 1_536_000
