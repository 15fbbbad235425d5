"""shared.claims.trend: the slope of a claim's effect against log10(active parameters), against hand-computed
cases and numpy's weighted polyfit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from shared.claims.trend import AWAY, FLAT, TOWARD, UNKNOWN, Rung, fit, standard_error

T2 = float(stats.t.ppf(0.975, 2))  # a 3-seed rung's t quantile


def rung(params: float, effect: float, se: float | None, n: int = 3) -> Rung:
    if se is None:
        return Rung("d", params, effect, None, None, n)
    return Rung("d", params, effect, effect - T2 * se, effect + T2 * se, n)


def test_equal_weights_by_hand() -> None:
    # x = 5, 6, 7; y = 0.1, 0.2, 0.3; se 0.05 each -> w = 400: slope 0.1, Sxx = 800, se(slope) = sqrt(1/800),
    # pooled df = 3 x (3 - 1) = 6, t(6) = 2.446912 -> half-width 0.0865114
    t = fit([rung(1e7, 0.3, 0.05), rung(1e5, 0.1, 0.05), rung(1e6, 0.2, 0.05)], claimed="positive")
    assert t.slope == pytest.approx(0.1) and t.intercept == pytest.approx(-0.4)  # 0.2 = b + 0.1 x 6
    assert t.high - t.slope == pytest.approx(2.446912 * math.sqrt(1 / 800), rel=1e-6)
    assert t.reading == TOWARD and [r.params for r in t.rungs] == [1e5, 1e6, 1e7]
    assert fit(t.rungs, claimed="negative").reading == AWAY  # an effect that should fall, rising
    assert fit(t.rungs, claimed="none").reading == AWAY  # "no loss beyond a margin": the loss must fall


def test_weighted_slope_matches_numpy_polyfit() -> None:
    ses = [0.02, 0.08, 0.05, 0.03]
    rungs = [rung(p, e, s) for p, e, s in zip([1e5, 3e5, 1e6, 3e6], [0.30, 0.10, 0.05, -0.02], ses)]
    t = fit(rungs, claimed="positive")
    slope = np.polyfit(np.log10([r.params for r in rungs]), [r.effect for r in rungs], 1, w=1 / np.array(ses))[0]
    assert t.slope == pytest.approx(slope, rel=1e-9)
    assert t.reading == AWAY and t.high < 0  # the effect shrinks as the model grows


def test_sizes_that_scatter_beyond_their_intervals_widen_the_slope() -> None:
    # y = 0.08, 0.11, 0.07 at x = 5, 6, 7 with se 0.01 each (w = 1e4): slope -0.005, line 0.09167, 0.08667, 0.08167,
    # residuals -0.035/3, +0.07/3, -0.035/3 -> chi^2 = 1e4 x 0.0049/6 = 49/6 on k - 2 = 1 df:
    # se = sqrt(1 / 2e4) x sqrt(49/6), t(1) = 12.706
    t = fit([rung(1e5, 0.08, 0.01), rung(1e6, 0.11, 0.01), rung(1e7, 0.07, 0.01)], claimed="none")
    assert t.slope == pytest.approx(-0.005)
    assert t.high - t.slope == pytest.approx(12.7062 * math.sqrt(49 / 6 / 2e4), rel=1e-4)
    assert t.reading == FLAT  # without the dispersion: [-0.0186, +0.0086] at t(6), also flat, but far narrower


def test_one_seed_rungs_use_residual_degrees_of_freedom() -> None:
    # y = 0.1, 0.3, 0.2 at x = 5, 6, 7: slope 0.05, residuals -0.05, +0.1, -0.05 (SS 0.015), df 1,
    # se = sqrt(0.015 / 1 / 2); t(1) = 12.7062 -> half-width 1.1004: flat
    t = fit([rung(1e5, 0.1, None, 1), rung(1e6, 0.3, None, 1), rung(1e7, 0.2, None, 1)], claimed="positive")
    assert t.slope == pytest.approx(0.05)
    assert t.high - t.slope == pytest.approx(12.7062 * math.sqrt(0.015 / 2), rel=1e-4)
    assert t.reading == FLAT


def test_too_few_rungs_have_no_trend() -> None:
    assert fit([rung(1e5, 0.1, 0.05)], claimed="positive").reading == UNKNOWN
    two_single = fit([rung(1e5, 0.1, None, 1), rung(1e6, 0.2, None, 1)], claimed="positive")
    assert two_single.reading == UNKNOWN and two_single.low is None and two_single.slope == pytest.approx(0.1)


def test_standard_error_inverts_the_interval() -> None:
    assert standard_error(rung(1e5, 0.1, 0.05)) == pytest.approx(0.05)
    boot = Rung("d", 1e5, 0.0, -1.959964, 1.959964, 100, method="bootstrap")
    assert standard_error(boot) == pytest.approx(1.0)
    assert standard_error(rung(1e5, 0.1, None, 1)) is None
    assert standard_error(Rung("d", 1e5, 0.5, 0.4, 0.6, 2, method="range")) is None  # a range is no CI


def test_text_names_sizes_and_the_claim_scale() -> None:
    t = fit([rung(1.1e5, 0.1, 0.05), rung(8.1e5, 0.2, 0.05), rung(2.7e6, 0.3, 0.05)], claimed="positive",
            unit="nats/char", claim_params=1.5e9)
    assert t.text.startswith("moves toward the claim: +0.") and "nats/char per 10x params" in t.text
    assert "0.11M-2.7M params (claim: 1.5B)" in t.text


SIZES_SPEC = """
claims:
  - id: outperform
    text: "A beats B"
    short: "A beats B on test loss"
    source: "arXiv 1234 abstract"
    source_kind: paper
    verified: true
    claim_scale: {active_params: 1.5e9, text: "GPT-MoE 1.5B"}
    per_dataset: [d]
    sizes: [s, d, l]
    judge: {kind: paired_difference, metric: loss, arms: [b, a], claimed: positive, unit: nats,
            scale: "tests.test_claims_trend:size_scale"}
"""
PARAMS = {"s": 1e5, "d": 1e6, "l": 1e7}


def size_scale(results, dataset, spec):
    return {"dataset": dataset, "active_params": PARAMS[dataset]}


def test_a_spec_with_sizes_carries_the_trend_on_its_own_verdict(tmp_path):
    from shared.claims import judge_paper, load_claims
    from shared.report.paper_hook import PaperResults

    path = tmp_path / "toy" / "paper.yaml"
    path.parent.mkdir()
    path.write_text(SIZES_SPEC)
    records = {}
    for dataset, gap in (("s", 0.1), ("d", 0.2), ("l", 0.3)):  # b - a per seed: gap - 0.05, gap, gap + 0.05
        records[dataset, "a"] = {"dataset": dataset, "model": "a",
                                 "runs": [{"seed": s, "metrics": {"loss": 1.0}} for s in (1, 2, 3)]}
        records[dataset, "b"] = {"dataset": dataset, "model": "b", "runs": [
            {"seed": s, "metrics": {"loss": 1.0 + gap + d}} for s, d in ((1, -0.05), (2, 0.0), (3, 0.05))]}
    (verdict,) = judge_paper(load_claims(path), PaperResults("toy", tmp_path / "toy", records))
    assert verdict.dataset == "d" and verdict.trend is not None
    assert [r["dataset"] for r in verdict.trend["rungs"]] == ["s", "d", "l"]
    assert verdict.trend["slope"] == pytest.approx(0.1) and verdict.trend["reading"] == TOWARD
    del records["l", "b"]  # two sizes: se(slope) = sqrt(1 / 600) = 0.0408, t(4) x 0.0408 = 0.113 > 0.1: flat
    (verdict,) = judge_paper(load_claims(path), PaperResults("toy", tmp_path / "toy", records))
    assert verdict.trend["slope"] == pytest.approx(0.1) and verdict.trend["reading"] == FLAT
    del records["s", "b"]  # the verdict's own size alone: no trend
    (verdict,) = judge_paper(load_claims(path), PaperResults("toy", tmp_path / "toy", records))
    assert verdict.trend is None


def test_sizes_without_the_verdicts_dataset_are_refused(tmp_path):
    from shared.claims import ClaimSpecError, load_claims

    path = tmp_path / "toy" / "paper.yaml"
    path.parent.mkdir()
    path.write_text(SIZES_SPEC.replace("sizes: [s, d, l]", "sizes: [s, l]"))
    with pytest.raises(ClaimSpecError, match="claim 'outperform': key 'sizes'"):
        load_claims(path)


def test_the_page_shows_each_size_the_trend_and_its_figure(tmp_path):
    from shared.claims import judge_paper, load_claims
    from shared.claims.judge import as_claim
    from shared.report.paper_hook import PaperReport, PaperResults
    from shared.report.paper_page import render_page, write_paper

    path = tmp_path / "toy" / "paper.yaml"
    path.parent.mkdir()
    path.write_text(SIZES_SPEC)
    records = {}
    for dataset, gap in (("s", 0.1), ("d", 0.2), ("l", 0.3)):
        records[dataset, "a"] = {"dataset": dataset, "model": "a",
                                 "runs": [{"seed": s, "metrics": {"loss": 1.0}} for s in (1, 2, 3)]}
        records[dataset, "b"] = {"dataset": dataset, "model": "b", "runs": [
            {"seed": s, "metrics": {"loss": 1.0 + gap + d}} for s, d in ((1, -0.05), (2, 0.0), (3, 0.05))]}
    claims = [as_claim(v) for v in judge_paper(load_claims(path), PaperResults("toy", tmp_path / "toy", records))]
    report = PaperReport(blocks=["# toy"], claims=claims)
    page = render_page("toy", report)
    assert page.index("## Verdicts") < page.index("## How the effects move with model size")
    # se per size 0.05 / sqrt(3), w = 1200: se(slope) = sqrt(1 / 2400), t(6) = 2.4469 -> half-width 0.0499
    assert "| A beats B on test loss (d) | s | 0.1M | +0.1 [-0.0242, +0.224] nats (95% t, n = 3) | inconclusive |" in page
    assert "moves toward the claim: +0.1 [+0.0501, +0.15] nats per 10x params, 0.1M-10M params (claim: 1.5B)" in page
    assert "![trend outperform](trend_outperform.png)" in page
    assert "(ratio 1/1500); across 0.1M-10M params: moves toward the claim |" in page  # the verdict table's scale cell
    written = write_paper(tmp_path / "out", "toy", report)
    assert (tmp_path / "out" / "trend_outperform.png").stat().st_size > 10_000 and len(written) == 3
    assert claims[0].as_json()["trend"]["reading"] == TOWARD  # claims.json carries it
