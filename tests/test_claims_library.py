"""The one claims library: each judge kind against a hand-computed case, the spec's one-line errors, and a spec
judged end to end on hand-made records (scale note, not run, a metric no record has)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from shared.claims import ClaimSpecError, judge_paper, load_claims
from shared.claims.display import effect_text, scale_note
from shared.claims.kinds import KINDS
from shared.report.paper_hook import PaperResults

T2 = 4.302652729911275  # scipy.stats.t.ppf(0.975, 2)


def _samples(a, b):
    return {"x": dict(enumerate(a, 1)), "y": dict(enumerate(b, 1))}


@pytest.mark.parametrize("kind, judge, a, b, status, effect, low, high", [
    # differences 1, 2, 3: mean 2, sd 1, half-width t * 1 / sqrt(3)
    ("paired_difference", {"claimed": "positive"}, [10, 12, 14], [9, 10, 11], "inconclusive", 2.0,
     2 - T2 / math.sqrt(3), 2 + T2 / math.sqrt(3)),
    ("paired_difference", {"claimed": "positive"}, [11, 13, 15], [9, 10, 11], "supported", 3.0,
     3 - T2 / math.sqrt(3), 3 + T2 / math.sqrt(3)),
    # no-loss claim with a 2% margin of the baseline's mean (10): loss 3 +- 2.48 lies wholly above 0.2
    ("paired_difference", {"claimed": "none", "margin": 0.02, "margin_relative_to": "y"}, [11, 13, 15], [9, 10, 11],
     "contradicted", 3.0, 3 - T2 / math.sqrt(3), 3 + T2 / math.sqrt(3)),
    ("ratio", {"claimed": "positive"}, [2, 2, 2], [1, 1, 1], "supported", 2.0, 2.0, 2.0),
    ("ratio", {"claimed": "negative"}, [2, 2, 2], [1, 1, 1], "contradicted", 2.0, 2.0, 2.0),
    ("threshold", {"claimed": "positive", "threshold": 1.1, "interval": "range"}, [1.3, 1.2, 1.25], None,
     "supported", 1.25, 1.2, 1.3),
    ("threshold", {"claimed": "positive", "threshold": 1.25, "interval": "range"}, [1.3, 1.2, 1.25], None,
     "inconclusive", 1.25, 1.2, 1.3),
    ("within_tolerance", {"tolerance": 1.0}, [0.1, -0.1, 0.0], [0, 0, 0], "supported", 0.0, -0.1 * T2 / math.sqrt(3),
     0.1 * T2 / math.sqrt(3)),
    ("within_tolerance", {"tolerance": 1.0}, [5.0, 5.1, 4.9], [0, 0, 0], "contradicted", 5.0,
     5 - 0.1 * T2 / math.sqrt(3), 5 + 0.1 * T2 / math.sqrt(3)),
    ("sign", {"claimed": "positive"}, [2, 3, 4], [1, 1, 1], "supported", 2.0, 1.0, 3.0),
    ("sign", {"claimed": "positive"}, [2, 0, 4], [1, 1, 1], "inconclusive", 1.0, -1.0, 3.0),
])
def test_each_kind_on_a_hand_computed_case(kind, judge, a, b, status, effect, low, high):
    arms = ["x"] if kind == "threshold" else ["x", "y"]
    samples = {"x": dict(enumerate(a, 1))} if b is None else _samples(a, b)
    out = KINDS[kind]({"arms": arms, **judge}, samples)
    assert out.status == status
    assert out.interval.effect == pytest.approx(effect)
    assert (out.interval.low, out.interval.high) == pytest.approx((low, high))


def test_paired_bootstrap_resamples_units_together():
    out = KINDS["paired_bootstrap"]({"arms": ["x", "y"], "claimed": "positive"}, _samples([2, 3, 4, 5], [1, 1, 1, 1]))
    assert out.status == "supported" and out.interval.method == "bootstrap"
    assert 1.0 <= out.interval.low <= 2.5 <= out.interval.high <= 4.0


def test_a_censored_speedup_can_contradict_but_never_support():
    judge = {"arms": ["evomoe", "switch"], "claimed": "positive", "margin": 1.0, "measure": "m:f"}
    never = {"speedup": {1: 1.0, 2: 1.0, 3: 1.0}, "censored": {1: 1.0, 2: 1.0, 3: 1.0}}
    out = KINDS["steps_to_target"](judge, never)
    assert out.status == "contradicted" and out.censored  # at most 1x, the claim is 2x
    bound_above = {"speedup": {1: 3.0, 2: 3.0}, "censored": {1: 1.0, 2: 1.0}}
    assert KINDS["steps_to_target"](judge, bound_above).status == "inconclusive"
    assert effect_text(1.0, 1.0, 1.0, 3, censored_steps=2000) == "not reached in 2000 steps (<= 1.00x)"


def test_one_unit_prints_no_spread_and_scale_far_below_is_named():
    assert effect_text(0.063, float("nan"), float("nan"), 1, "nats") == "+0.063 nats (n = 1)"
    assert effect_text(-0.063, -0.088, -0.039, 3, "nats") == "-0.063 [-0.088, -0.039] nats (95% t, n = 3)"
    assert scale_note({"active_params": 8.1e5}, {"active_params": 1.5e9}) == "at 0.81M params (claim: 1.5B)"
    assert scale_note({"active_params": 1e9}, {"active_params": 1.5e9}) == ""


SPEC = """
claims:
  - id: outperform
    text: "A beats B"
    short: "A beats B on test loss"
    source: "arXiv 1234 abstract"
    source_kind: paper
    verified: true
    claim_scale: {active_params: 1.5e9, text: "GPT-MoE 1.5B"}
    per_dataset: [d]
    judge: {kind: paired_difference, metric: loss, arms: [b, a], claimed: positive, unit: nats,
            scale: "tests.test_claims_library:tiny_scale"}
  - id: cluster
    text: "A is 2x faster on 64 GPUs"
    short: "A trains 2x faster on 64 GPUs"
    source: "arXiv 1234 Table 3"
    source_kind: paper
    verified: false
    claim_scale: {text: "64 A100 GPUs"}
    not_testable: "needs 64 GPUs"
"""


def tiny_scale(results, dataset, spec):
    return {"dataset": dataset, "active_params": 8.1e5}


def _record(model, losses):
    return {"dataset": "d", "model": model, "runs": [{"seed": s, "metrics": {"loss": v}} for s, v in losses.items()]}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "toy" / "paper.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_spec_judged_end_to_end(tmp_path):
    specs = load_claims(_write(tmp_path, SPEC))
    records = {("d", "a"): _record("a", {1: 1.0, 2: 1.1, 3: 1.2}), ("d", "b"): _record("b", {1: 1.5, 2: 1.7, 3: 1.8})}
    first, second = judge_paper(specs, PaperResults("toy", tmp_path / "toy", records))
    assert first.status == "supported" and first.effect == pytest.approx(0.5667, abs=1e-4) and first.n == 3
    assert first.scale_note == "at 0.81M params (claim: 1.5B)"
    assert first.display_status == "supported at 0.81M params (claim: 1.5B)"
    assert second.status == "not testable here" and second.evidence == "needs 64 GPUs"
    only_a = judge_paper(specs, PaperResults("toy", tmp_path / "toy", {("d", "a"): records["d", "a"]}))[0]
    assert only_a.status == "not run" and "no record of b on d" in only_a.evidence


def test_a_metric_no_record_has_is_an_error_not_a_silent_not_run(tmp_path):
    specs = load_claims(_write(tmp_path, SPEC.replace("metric: loss", "metric: los")))
    records = {("d", "a"): _record("a", {1: 1.0}), ("d", "b"): _record("b", {1: 1.5})}
    with pytest.raises(ClaimSpecError, match="claim 'outperform': key 'judge.metric': 'los' is in no run of d/b"):
        judge_paper(specs, PaperResults("toy", tmp_path / "toy", records))


@pytest.mark.parametrize("change, message", [
    (("short: \"A beats B on test loss\"", "short: \"" + "x" * 61 + "\""), "key 'short' has 61 characters"),
    (("verified: true", "verified: true\n    verfied: true"), "key 'verfied' is not a claim key"),
    (("claimed: positive, unit", "claimed: up, unit"), "key 'judge.claimed' is 'up'"),
    (("kind: paired_difference", "kind: paired_t"), "key 'judge.kind' is 'paired_t'"),
    (("claim_scale: {active_params: 1.5e9, text: \"GPT-MoE 1.5B\"}", "claim_scale: {active_params: big}"),
     "key 'claim_scale.active_params' is 'big'"),
    (("    not_testable: \"needs 64 GPUs\"", "    not_testable: \"x\"\n    judge: {kind: sign, arms: [a, b]}"),
     "claim 'cluster': key 'judge' and 'not_testable' are both given"),
    (("id: cluster", "id: outperform"), "claim id 'outperform' is used twice"),
    (("arms: [b, a]", "arms: [b, a], tolerance: -1"), "key 'judge.tolerance' is -1"),
])
def test_bad_specs_are_refused_in_one_line_naming_file_paper_claim_and_key(tmp_path, change, message):
    path = _write(tmp_path, SPEC.replace(*change))
    with pytest.raises(ClaimSpecError, match=message) as exc:
        load_claims(path)
    text = str(exc.value)
    assert "\n" not in text and str(path) in text and "(paper toy)" in text


def test_a_yaml_syntax_error_names_the_file_and_line(tmp_path):
    path = _write(tmp_path, "claims:\n  - id: [unclosed\n")
    with pytest.raises(ClaimSpecError, match=r"paper.yaml line \d+: not valid YAML"):
        load_claims(path)


def steps(results, dataset, spec):
    return {"speedup": {1: 1.0, 2: 1.0}, "censored": {1: 1.0, 2: 1.0}, "budget": 300 if dataset == "d" else 2000}


def test_per_dataset_metric_and_unit_and_a_budget_from_the_measure(tmp_path):
    text = SPEC.replace("metric: loss", "metric: {d: loss, e: valid_loss}").replace("unit: nats", "unit: {d: nats, e: PPL}")
    text = text.replace("per_dataset: [d]", "per_dataset: [d, e]")
    text += """  - id: fast
    text: "A reaches B's loss 2x faster"
    short: "A reaches B's loss in half the steps"
    source: "arXiv 1234 Fig. 5"
    source_kind: paper
    verified: true
    claim_scale: {text: unknown}
    per_dataset: [d]
    judge: {kind: steps_to_target, measure: "tests.test_claims_library:steps", arms: [a, b], claimed: positive, margin: 1.0}
"""
    records = {("d", "a"): _record("a", {1: 1.0, 2: 1.1}), ("d", "b"): _record("b", {1: 1.5, 2: 1.7}),
               ("e", "a"): {"dataset": "e", "model": "a", "runs": [{"seed": 1, "metrics": {"valid_loss": 2.0}}]},
               ("e", "b"): {"dataset": "e", "model": "b", "runs": [{"seed": 1, "metrics": {"valid_loss": 2.5}}]}}
    on_d, on_e, _, fast = judge_paper(load_claims(_write(tmp_path, text)), PaperResults("toy", tmp_path / "toy", records))
    assert on_d.unit == "nats" and on_d.n == 2
    assert on_e.unit == "PPL" and on_e.n == 1 and on_e.status == "inconclusive" and "+0.5 PPL (n = 1)" in on_e.evidence
    assert fast.status == "contradicted" and fast.evidence.startswith("not reached in 300 steps (<= 1.00x)")


def test_margin_per_dataset_window_in_the_rule_and_ratios_unsigned(tmp_path):
    text = SPEC.replace("claimed: positive, unit: nats,", "claimed: none, margin: {d: 0.0, e: 1.0}, window: last 10% of steps,")
    text = text.replace("per_dataset: [d]", "per_dataset: [d, e]")
    records = {(ds, m): {"dataset": ds, "model": m, "runs": [{"seed": s, "metrics": {"loss": v + (0.5 if m == "b" else 0)}}
                                                             for s, v in {1: 1.0, 2: 1.1, 3: 1.3}.items()]}
               for ds in ("d", "e") for m in ("a", "b")}
    on_d, on_e, _ = judge_paper(load_claims(_write(tmp_path, text)), PaperResults("toy", tmp_path / "toy", records))
    assert on_d.status == "contradicted" and on_e.status == "supported"  # loss 0.5 > margin 0 on d, < 1 on e
    assert "(window: last 10% of steps)" in on_d.evidence and on_d.arms == ("b", "a")
    out = KINDS["ratio"]({"arms": ["x", "y"], "claimed": "negative"}, _samples([1, 1, 1], [2, 2, 2]))
    assert "ratio - 1 < 0" in out.rule
    assert effect_text(1.37, 1.31, 1.54, 5, "x", "range", signed=False) == "1.37 [1.31, 1.54] x (range, n = 5)"


def test_official_pairs_pair_the_official_record_seed_by_seed_or_say_how_to_make_it(tmp_path):
    from shared.claims.official import pairs
    from shared.claims.spec import parse_claim

    spec = parse_claim({"id": "agree", "text": "t", "short": "s", "source": "x", "source_kind": "suite", "verified": True,
                        "claim_scale": {"text": "unknown"}, "per_dataset": ["d"],
                        "judge": {"kind": "within_tolerance", "metric": "loss", "tolerance": 1.0, "arms": ["m", "official"],
                                  "measure": "shared.claims.official:pairs"}}, "toy", "paper.yaml")
    results = PaperResults("toy", tmp_path / "toy", {("d", "m"): _record("m", {1: 70.0, 2: 71.0})})
    assert pairs(results, "d", spec) == "no official-code record: make official-toy dataset=d"
    (tmp_path / "toy" / "d").mkdir(parents=True)
    (tmp_path / "toy" / "d" / "official.json").write_text(
        '{"runs": [{"seed": 1, "metrics": {"loss": 70.5}}, {"seed": 2, "metrics": {"loss": 70.5}}]}')
    assert pairs(results, "d", spec) == {"m": {1: 70.0, 2: 71.0}, "official": {1: 70.5, 2: 70.5}}
