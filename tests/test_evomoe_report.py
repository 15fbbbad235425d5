"""EvoMoE's page from hand-made records: paired differences and their statuses, the bigram floor that makes
both claims `not testable here`, steps to Switch's final validation perplexity, and the page's blocks."""

from __future__ import annotations

import statistics

import pytest

from replications.evomoe import REPLICATION, report, speedup
from shared.paper_report import Figure, PaperResults, Table
from shared.verdict import STATUSES

PROTOCOL = {"layers": 2, "d_model": 128, "steps": 300, "batch_size": 16, "seq_len": 64}


def record(model: str, test: dict[int, float], curves: dict[int, list[float]] | None = None) -> dict:
    """A complete record: per-seed test PPL (valid = test + 10) and validation curves at steps 100, 200, 300."""
    curves = curves or {s: [v + 200, v + 100, v] for s, v in test.items()}
    runs = [{"seed": s, "metrics": {"test_ppl": v, "valid_ppl": v + 10},
             "train": {"curve": [{"step": 100 * (i + 1), "valid_ppl_subset": p, "active_experts": 1.0}
                                 for i, p in enumerate(curves[s])]}} for s, v in test.items()]

    def agg(values: list[float]) -> dict:
        m, sd = statistics.mean(values), statistics.stdev(values) if len(values) > 1 else 0.0
        return {"mean": m, "std": sd, "ci95_low": m - sd, "ci95_high": m + sd, "n": len(values)}

    return {"paper": "evomoe", "dataset": "wikitext2", "model": model, "complete": True, "scale": "full",
            "runs": runs, "wall_seconds": 180.0,
            "aggregate": {"test_ppl": agg(list(test.values())), "valid_ppl": agg([v + 10 for v in test.values()]),
                          "train_tokens_per_s": agg([5000.0]), "mean_active_experts": agg([1.0])},
            "environment": {"hardware": {"cpu": "test CPU", "torch_threads": 1, "gpu": None}},
            "config": {"paper": {"protocol": PROTOCOL}}}


def results(**per_model: dict) -> PaperResults:
    return PaperResults("evomoe", report.PAPER.parent, {("wikitext2", m): r for m, r in per_model.items()})


def models(evomoe: float, switch: float, base: float, hash_: float) -> dict[str, dict]:
    """Four models, three seeds each: per-seed noise of about 1 keeps every paired interval narrow (about +-1)."""
    def rec(name: str, level: float) -> dict:
        offsets = (-1, 0, 1.5) if name == "evomoe" else (-1, 0.5, 1)
        return record(name, {s: level + o for s, o in zip((1, 2, 3), offsets)})

    return {"evomoe": rec("evomoe", evomoe), "switch": rec("switch", switch), "base": rec("base", base),
            "hash": rec("hash", hash_)}


NO_FLOOR = {"floor": lambda records: None}  # no bigram: the claims are judged on the ordering


@pytest.mark.parametrize("levels, want, per_baseline", [
    ((500, 600, 600, 600), "supported", ["supported"] * 3),
    ((650, 600, 700, 700), "contradicted", ["contradicted", "supported", "supported"]),
])
def test_outperform_claim_from_paired_intervals(levels, want, per_baseline):
    page = report.build(results(**models(*levels)), **NO_FLOOR)
    claim = page.claims[0]
    assert claim.status == want and claim.kind == "paper" and claim.verified is True
    assert [c["status"] for c in page.data["checks"]] == per_baseline
    assert "at this small scale: a 2-layer d128 GPT, 300 steps" in claim.scale
    assert page.data["checks"][0]["ci95"][0] < page.data["checks"][0]["baseline_minus_evomoe"]


def test_a_wide_interval_is_inconclusive():
    recs = models(500, 600, 600, 600)
    recs["base"] = record("base", {1: 400.0, 2: 600.0, 3: 800.0})  # differences -99, 100, 298.5: interval spans 0
    page = report.build(results(**recs), **NO_FLOOR)
    assert [c["status"] for c in page.data["checks"]] == ["supported", "inconclusive", "supported"]
    assert page.claims[0].status == "inconclusive"


def test_below_the_bigram_floor_nothing_is_testable():
    floor = {"valid_ppl": 460.0, "test_ppl": 430.0, "test_ppl_full_train": 267.0}
    page = report.build(results(**models(650, 600, 700, 700)), floor=lambda records: floor)
    assert [c.status for c in page.claims] == ["not testable here", "not testable here"]
    assert "bigram of the same tokens (test PPL 430.0)" in page.claims[0].evidence
    assert "measured ordering: contradicted" in page.claims[0].evidence  # the measurement is still reported
    assert not page.data["testable"]
    bigram_row = page.blocks[2].rows[-1]
    assert bigram_row[0].startswith("bigram") and bigram_row[2] == "430.0 (full train set: 267.0)"
    # one model below the floor makes them testable again
    page = report.build(results(**models(650, 600, 700, 400)), floor=lambda records: floor)
    assert page.claims[0].status == "contradicted" and page.data["testable"]


def test_steps_to_switch_and_the_speed_claim():
    fast = {s: [560.0, 540.0, 530.0] for s in (1, 2, 3)}  # below Switch's final 550 at step 200
    slow = {s: [700.0, 650.0, 600.0] for s in (1, 2, 3)}  # never reaches it
    switch = record("switch", {1: 550.0, 2: 550.0, 3: 550.0}, {s: [600.0, 560.0, 550.0] for s in (1, 2, 3)})
    for curves, status, effect in ((fast, "supported", 1.5), (slow, "contradicted", None)):
        evo = record("evomoe", {1: 500.0, 2: 501.0, 3: 502.0}, curves)
        page = report.build(results(evomoe=evo, switch=switch), **NO_FLOOR)
        claim = page.claims[1]
        assert claim.status == status and claim.effect == effect and claim.kind == "paper"
        assert speedup.per_seed(evo, switch) == {s: effect for s in (1, 2, 3)}
        assert claim.interval == ((1.5, 1.5) if effect else None)
    target, rows = speedup.rows({"evomoe": record("evomoe", {1: 1.0}, {1: fast[1]}), "switch": switch})
    assert target == 550.0 and [(r["model"], r["steps_to_target"], r["speedup"]) for r in rows] == [
        ("evomoe", 200, 1.5), ("switch", 300, 1.0)]
    assert speedup.rows({"evomoe": switch}) is None


def test_page_from_records_and_nothing_without_them():
    page = report.build(results(**models(650, 600, 700, 700), dense=record("dense", {1: 600.0, 2: 601.0, 3: 602.0})),
                        **NO_FLOOR)
    assert all(c.status in STATUSES for c in page.claims) and len(page.claims) == 2
    tables = [b for b in page.blocks if isinstance(b, Table)]
    assert [t.rows[0][0] for t in tables] == ["evomoe", "switch", "evomoe"]  # models, paired checks, steps to Switch
    assert [r[0] for r in tables[0].rows] == ["evomoe", "dense", "switch", "hash", "base"]  # the paper's order
    assert [r[1] for r in tables[1].rows] == ["yes", "yes", "yes", "no"]  # dense is not named in the claim
    assert [f.name for f in page.figures()] == ["wikitext2_curves.png"] and isinstance(page.blocks[-1], Figure)
    assert page.blocks[0].startswith("# EvoMoE vs") and "CPU" in page.blocks[0]
    assert page.data["steps_to_switch"]["target"] == pytest.approx(600.0 + 0.5 / 3)
    assert report.build(results()) is None
    assert REPLICATION.report(results()) is None


def test_figure_draws():
    page = report.build(results(**models(650, 600, 700, 700)), **NO_FLOOR)
    fig = page.figures()[0].draw()
    assert len(fig.axes) == 2 and len(fig.axes[0].lines) == 4
