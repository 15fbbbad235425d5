"""PP-StructureV2's claim specs (paper.yaml) load and judge the committed records (results/ppstructurev2, read only)
the way the page shows them: the structure accuracy on the run's Wilson interval against the paper's 76.31 % (the
numbers of results/ppstructurev2/claims.json before the claims moved to paper.yaml), the nine others not testable."""

from __future__ import annotations

import pytest

from replications.ppstructurev2 import measures, report
from shared.claims import judge_claim, load_claims
from shared.paths import REPO_ROOT
from shared.reference import load_paper
from shared.report.paper_hook import PaperResults, load_paper_results

NOT_TESTABLE = ("not testable here", None, None)
# id: (status, effect, interval)
WANT = {"table_accuracy": ("inconclusive", -6.31, (-28.2073, 9.1423)), "table_teds": NOT_TESTABLE,
        "table_latency": NOT_TESTABLE, "layout_map": NOT_TESTABLE, "layout_latency": NOT_TESTABLE,
        "cdla_map": NOT_TESTABLE, "funsd_ser": NOT_TESTABLE, "funsd_re": NOT_TESTABLE, "xfund_ser": NOT_TESTABLE,
        "xfund_re": NOT_TESTABLE}


def test_the_specs_load_with_the_papers_numbers_and_scale():
    specs = {s.id: s for s in load_claims(report.PAPER)}
    assert list(specs) == list(WANT)
    assert all(s.claim_scale.get("dataset") and len(s.short) <= 60 for s in specs.values())
    paper = load_paper(report.PAPER)
    acc = specs["table_accuracy"].judge
    reported = next(e for e in paper["reported"] if (e["dataset"], e["metric"]) == ("pubtabnet", "test_acc"))
    assert (acc["threshold"], acc["margin"]) == (reported["value"], paper["tolerances"]["test_acc"])
    assert specs["table_accuracy"].claim_scale["dataset"] == "PubTabNet val (9,115 tables)"


def test_the_committed_records_judged_as_the_page_shows():
    page = report.build(load_paper_results(REPO_ROOT / "results", "ppstructurev2"))
    got = {c.id: (c.status, c.effect, c.interval) for c in page.claims}
    assert got == WANT
    acc = page.claims[0]
    assert acc.evidence.startswith("-6.31 [-28.2, +9.14] points of structure accuracy (ours - paper) (95% Wilson, n = 20)")
    assert "70.0 % [48.1, 85.5] on 20 tables (pubtabnet_mini) vs the paper's 76.31 %" in acc.evidence
    assert acc.scale == "20 of the 9,115 validation tables" and acc.n == 20 and not acc.scale_note
    assert page.claims[-1].evidence == "the VI-LayoutXLM weights are not obtainable (nor XFUND)"


def _table(n: int, acc: float, low: float, high: float) -> dict:
    metrics = {"test_acc": acc, "test_acc_ci_low": low, "test_acc_ci_high": high}
    return {"runs": [{"seed": 1, "metrics": metrics, "train": {"details": {"task": "table", "tables": n}}}]}


@pytest.mark.parametrize("low, high, want", [(75.5, 90.0, "supported"), (60.0, 75.0, "contradicted"),
                                             (70.0, 80.0, "inconclusive")])
def test_accuracy_is_no_loss_beyond_one_point_on_the_wilson_interval(low, high, want):
    spec = load_claims(report.PAPER)[0]
    found = measures.structure_accuracy(PaperResults("ppstructurev2", REPO_ROOT / "none", {
        ("pubtabnet", "slanet"): _table(9115, 80.0, low, high), ("pubtabnet_mini", "slanet"): _table(20, 10.0, 0, 20)}),
        None, spec)
    assert found["status"] == want and found["n"] == 9115  # the full split wins over the 20-table subset
    assert found["effect"] == pytest.approx(80.0 - 76.31)


def test_no_table_run_is_not_run_and_the_full_split_has_no_scale_words(tmp_path):
    spec = load_claims(report.PAPER)[0]
    verdict = judge_claim(spec, PaperResults("ppstructurev2", tmp_path, {}))
    assert verdict.status == "not run" and "make replicate-ppstructurev2" in verdict.evidence
    full = PaperResults("ppstructurev2", tmp_path, {("pubtabnet", "slanet"): _table(9115, 76.0, 75.1, 76.9)})
    assert measures.scale(full, None, spec) == {"dataset": "pubtabnet", "text": ""}
