"""EvoMoE's WikiText-2 page and verdicts from hand-made records: one verdict per named baseline from paired
intervals, the bigram floor that makes them `not testable here` (its measure still shown), the steps to Switch's
final validation perplexity with a censored seed printed as a bound, and the page's blocks."""

from __future__ import annotations

import statistics

import pytest

from replications.evomoe import REPLICATION, measures, report, speedup
from shared.report.paper_hook import Figure, PaperResults, Table
from shared.verdict import STATUSES

PROTOCOL = {"layers": 2, "d_model": 128, "steps": 300, "batch_size": 16, "seq_len": 64}
NO_FLOOR = {"valid_ppl": 1e9, "test_ppl": 1e9, "test_ppl_full_train": 1e9}  # every model beats it: judged


@pytest.fixture(autouse=True)
def bigram(monkeypatch):
    """No data needed: the bigram floor as the test sets it (default: beaten), parameters counted as stated."""
    floor = dict(NO_FLOOR)
    monkeypatch.setattr(measures, "wikitext_bigram", lambda records: floor)
    monkeypatch.setattr(measures, "parameters", lambda record: (2_000_000, 810_000))
    return floor


def record(model: str, test: dict[int, float], curves: dict[int, list[float]] | None = None) -> dict:
    """A complete record: per-seed test PPL (valid = test + 10) and validation curves at steps 100, 200, 300."""
    curves = curves or {s: [v + 200, v + 100, v] for s, v in test.items()}
    runs = [{"seed": s, "metrics": {"test_ppl": v, "valid_ppl": v + 10},
             "train": {"steps": 300, "train_tokens": 300 * 16 * 64,
                       "curve": [{"step": 100 * (i + 1), "valid_ppl_subset": p, "active_experts": 1.0}
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


def verdicts(page) -> dict[str, object]:
    return {c.id: c for c in page.claims if c.dataset == "wikitext2"}


@pytest.mark.parametrize("levels, want", [
    ((500, 600, 600, 600), ["supported"] * 3),
    ((650, 600, 700, 700), ["contradicted", "supported", "supported"]),
])
def test_one_verdict_per_named_baseline_from_paired_intervals(levels, want):
    page = report.build(results(**models(*levels)))
    found = verdicts(page)
    claims = [found[f"beats_{b}_wikitext2"] for b in ("switch", "base", "hash")]
    assert [c.status for c in claims] == want
    switch = claims[0]
    assert switch.effect == pytest.approx(levels[1] - levels[0]) and switch.n == 3  # seed noise cancels
    assert switch.interval[0] < switch.effect < switch.interval[1] and switch.kind == "paper" and switch.verified
    assert switch.short == "EvoMoE reaches lower test perplexity than Switch (wikitext2)"
    assert "StableMoE" in switch.caveat and switch.claim_scale["active_params"] == 1.5e9
    assert switch.scale_note == "at 0.81M params (claim: 1.5B)"  # far below the claim's scale, and says so
    assert switch.display_status == f"{want[0]} at 0.81M params (claim: 1.5B)"


def test_a_wide_interval_is_inconclusive():
    recs = models(500, 600, 600, 600)
    recs["base"] = record("base", {1: 400.0, 2: 600.0, 3: 800.0})  # differences -99, 100, 298.5: interval spans 0
    assert verdicts(report.build(results(**recs)))["beats_base_wikitext2"].status == "inconclusive"


def test_below_the_bigram_floor_nothing_is_testable(bigram):
    bigram.update(valid_ppl=460.0, test_ppl=430.0, test_ppl_full_train=267.0)
    page = report.build(results(**models(650, 600, 700, 700)))
    found = verdicts(page)
    assert {c.status for c in found.values()} == {"not testable here"} and len(found) == 4
    evidence = found["beats_switch_wikitext2"].evidence
    assert "bigram of the same tokens (test PPL 430.0)" in evidence
    assert "measured: -50 [" in evidence and found["beats_switch_wikitext2"].effect == pytest.approx(-50.0)
    bigram_row = page.blocks[1].rows[-1]
    assert bigram_row[0].startswith("bigram") and bigram_row[2] == "430.0 (full train set: 267.0)"
    # one model below the floor makes them testable again
    found = verdicts(report.build(results(**models(650, 600, 700, 400))))
    assert found["beats_switch_wikitext2"].status == "contradicted"


def test_steps_to_switch_and_the_speed_claim():
    fast = {s: [560.0, 540.0, 530.0] for s in (1, 2, 3)}  # below Switch's final 550 at step 200
    slow = {s: [700.0, 650.0, 600.0] for s in (1, 2, 3)}  # never reaches it
    switch = record("switch", {1: 550.0, 2: 550.0, 3: 550.0}, {s: [600.0, 560.0, 550.0] for s in (1, 2, 3)})
    for curves, status, effect in ((fast, "supported", 1.5), (slow, "contradicted", 1.0)):
        evo = record("evomoe", {1: 500.0, 2: 501.0, 3: 502.0}, curves)
        claim = verdicts(report.build(results(evomoe=evo, switch=switch)))["faster_wikitext2"]
        assert claim.status == status and claim.effect == pytest.approx(effect) and claim.n == 3
    # never reached: Switch's 300 steps / EvoMoE's last 300, a bound, printed as one (not "1x [1, 1]")
    assert claim.evidence.startswith("not reached in 300 steps (<= 1.00x)")
    assert [r["model_steps"] for r in speedup.seed_rows(evo, switch)] == [None] * 3
    target, rows = speedup.rows({"evomoe": record("evomoe", {1: 1.0}, {1: fast[1]}), "switch": switch})
    assert target == 550.0 and [(r["model"], r["steps_to_target"], r["speedup"]) for r in rows] == [
        ("evomoe", 200, 1.5), ("switch", 300, 1.0)]
    assert speedup.rows({"evomoe": switch}) is None


def test_runs_of_another_length_than_the_protocol_are_not_run():
    longer = {m: {**r, "runs": [{**run, "train": {**run["train"], "curve": run["train"]["curve"] + [
        {"step": 400, "valid_ppl_subset": 1.0, "active_experts": 1.0}]}} for run in r["runs"]]}
        for m, r in models(650, 600, 700, 700).items()}
    claim = verdicts(report.build(results(**longer)))["faster_wikitext2"]
    assert claim.status == "not run" and claim.evidence.startswith(
        "the wikitext2 runs end at step 400, not the protocol's 300 (judge.options.budget)")


def test_page_from_records_and_nothing_without_them():
    page = report.build(results(**models(650, 600, 700, 700), dense=record("dense", {1: 600.0, 2: 601.0, 3: 602.0})))
    assert all(c.status in STATUSES for c in page.claims)
    assert [c.status for c in page.claims if c.dataset == "tinyshakespeare"] == ["not run"] * 4  # no records there
    assert page.claims[-1].id == "flops_efficiency" and page.claims[-1].status == "not testable here"
    tables = [b for b in page.blocks if isinstance(b, Table)]
    assert [t.rows[0][0] for t in tables] == ["evomoe", "switch", "evomoe"]  # models, paired checks, steps to Switch
    assert [r[0] for r in tables[0].rows[:-1]] == ["evomoe", "dense", "switch", "hash", "base"]  # the paper's order
    assert [r[:2] for r in tables[1].rows] == [["switch", "yes"], ["base", "yes"], ["hash", "yes"], ["dense", "no"]]
    assert [f.name for f in page.figures()] == ["wikitext2_curves.png"] and isinstance(page.blocks[-1], Figure)
    assert page.blocks[0].startswith("# EvoMoE vs") and "CPU" in page.blocks[0]
    assert page.data["steps_to_switch"]["target"] == pytest.approx(600.0 + 0.5 / 3)
    assert report.build(results()) is None
    assert REPLICATION.report(results()) is None


def test_figure_draws():
    page = report.build(results(**models(650, 600, 700, 700)))
    fig = page.figures()[0].draw()
    assert len(fig.axes) == 2 and len(fig.axes[0].lines) == 4
