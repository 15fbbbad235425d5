"""Every paper's claims are specs the one library can judge, and the committed index carries each verdict's scale."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shared.claims import load_claims

ROOT = Path(__file__).resolve().parents[1]
PAPERS = sorted(p.parent.name for p in (ROOT / "replications").glob("*/paper.yaml"))


@pytest.mark.parametrize("paper", PAPERS)
def test_every_claim_has_a_judge_or_a_reason_and_a_scale(paper):
    specs = load_claims(ROOT / "replications" / paper / "paper.yaml")  # validated on load: one-line errors
    assert specs, f"{paper}: paper.yaml has no claims"
    for spec in specs:
        assert (spec.judge is None) != (spec.not_testable is None) and spec.claim_scale and len(spec.short) <= 60


def test_the_committed_index_carries_the_scale_of_every_judged_verdict():
    claims = json.loads((ROOT / "results" / "index.json").read_text())["claims"]
    judged = [c for c in claims if c["status"] not in ("not testable here", "not run")]
    assert judged and all(c["reached_scale"] and c["claim_scale"] for c in judged)
    assert all(c["short"] and c["id"] for c in claims)
    specs = {(p, s.id) for p in PAPERS for s in load_claims(ROOT / "replications" / p / "paper.yaml")}
    assert {(c["paper"], c["id"]) for c in claims} <= specs  # every verdict on the page comes from a spec
