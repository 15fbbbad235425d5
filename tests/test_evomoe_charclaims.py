"""EvoMoE's claims judged on Tiny Shakespeare, from hand-made records with planted curves: the speed claim's
ratio of steps and its interval on log ratios (checked by hand), the outperform claim on validation loss, the
bigram floor's margin that makes both `not testable here`, and the WikiText-2 verdicts left as they were."""

from __future__ import annotations

import math

import pytest

from replications.evomoe import charclaims, report
from shared.paper_report import PaperResults, Table
from shared.stats import summarize

T_975_2 = 4.302652729911275  # Student t, 97.5% quantile, 2 degrees of freedom (tables): the 3-seed interval
FLOOR = 2.484  # the character bigram's validation loss (nats/char), as measured on the real data
STEPS = [1] + list(range(101, 2000, 100)) + [2000]  # the protocol's curve: a point every 100 steps and the last
PROTOCOL = {"layers": 1, "d_model": 8, "heads": 2, "seq_len": 64, "batch_size": 12, "steps": 2000, "cutoffs": None,
            "div_value": None, "dropout": 0.0, "init_std": 0.02}  # a tiny GPT: parameters are built from it
MOE = {"num_experts": 4, "ffn_hidden": 16}
MODELS = {"evomoe": {"gate": "dts", **MOE, "gate_options": {"threshold": 0.001, "use_gumbel_gates": False}},
          "dense": {"gate": "dense", "ffn_hidden": 16},
          "switch": {"gate": "switch", **MOE, "gate_options": {"jitter": 0.01, "capacity_factor": 1.25}},
          "gshard": {"gate": "gshard", **MOE, "ffn_hidden": 8},
          "hash": {"gate": "hash", **MOE, "gate_options": {"seed": 0}},
          "base": {"gate": "base", **MOE}}
SWITCH_FINAL = 1.95


def curve(speed: float) -> list[float]:
    """Validation loss at STEPS: Switch's line from 3.0 to SWITCH_FINAL at step 2000 run ``speed`` times as fast,
    then still falling, so the first point at or below Switch's final loss is the first at step >= 2000 / speed."""
    return [SWITCH_FINAL + 1.05 * (1 - min(1.0, speed * s / 2000)) - 0.1 * max(0.0, speed * s / 2000 - 1)
            for s in STEPS]


def record(model: str, final: dict[int, float], speeds: dict[int, float] | None = None) -> dict:
    speeds = speeds or {s: 1.0 for s in final}
    runs = [{"seed": s, "metrics": {"valid_loss": v, "valid_ppl": math.exp(v)},
             "train": {"steps": 2000, "train_tokens": 2000 * 12 * 64,
                       "curve": [{"step": st, "valid_ppl_subset": math.exp(loss), "active_experts": 1.0}
                                 for st, loss in zip(STEPS, curve(speeds[s]))]}} for s, v in final.items()]
    return {"paper": "evomoe", "dataset": "tinyshakespeare", "model": model, "complete": True, "scale": "full",
            "runs": runs, "wall_seconds": 600.0,
            "aggregate": {"valid_loss": summarize(list(final.values())),
                          "valid_ppl": summarize([math.exp(v) for v in final.values()]),
                          "train_tokens_per_s": summarize([1400.0]), "mean_active_experts": summarize([1.0])},
            "environment": {"hardware": {"cpu": "test CPU", "torch_threads": 1, "gpu": None}},
            "config": {"paper": {"protocol": PROTOCOL}, "model": {"name": model, **MODELS[model]}}}


def arms(evo_speeds: dict[int, float], **finals: dict[int, float]) -> dict[str, dict]:
    """Every arm, 3 seeds, clearly below the floor; EvoMoE's curves run at ``evo_speeds``, every other at 1."""
    levels = {"evomoe": {1: 1.85, 2: 1.84, 3: 1.86}, "dense": {1: 1.90, 2: 1.91, 3: 1.89},
              "switch": {1: 1.95, 2: 1.96, 3: 1.94}, "gshard": {1: 1.93, 2: 1.93, 3: 1.94},
              "hash": {1: 2.00, 2: 2.01, 3: 1.99}, "base": {1: 1.97, 2: 1.96, 3: 1.98}} | finals
    return {m: record(m, v, evo_speeds if m == "evomoe" else None) for m, v in levels.items()}


def wikitext(model: str) -> dict:
    seeds = {1: 600.0, 2: 601.0, 3: 602.0}
    runs = [{"seed": s, "metrics": {"test_ppl": v, "valid_ppl": v},
             "train": {"curve": [{"step": 300, "valid_ppl_subset": v, "active_experts": 1.0}]}} for s, v in seeds.items()]
    agg = summarize(list(seeds.values()))
    return {"paper": "evomoe", "dataset": "wikitext2", "model": model, "complete": True, "scale": "full", "runs": runs,
            "wall_seconds": 60.0, "aggregate": {"test_ppl": agg, "valid_ppl": agg, "train_tokens_per_s": agg,
                                                "mean_active_experts": summarize([1.0])},
            "environment": {"hardware": {"cpu": "test CPU", "torch_threads": 1, "gpu": None}},
            "config": {"paper": {"protocol": {"layers": 2, "d_model": 128, "steps": 300, "batch_size": 16,
                                              "seq_len": 64}}}}


def build(chars: dict[str, dict], floor: float | None = FLOOR):
    found = {("wikitext2", m): wikitext(m) for m in ("evomoe", "switch", "base", "hash")}
    found |= {("tinyshakespeare", m): r for m, r in chars.items()}
    return report.build(PaperResults("evomoe", report.PAPER.parent, found), floor=lambda records: None,
                        char_floor=lambda: floor)


def char_claims(page):
    return [c for c in page.claims if c.text.endswith(charclaims.ON)]


def hand_interval(ratios: list[float]) -> tuple[float, float, float]:
    logs = [math.log(r) for r in ratios]
    mean = sum(logs) / 3
    sd = math.sqrt(sum((v - mean) ** 2 for v in logs) / 2)
    half = T_975_2 * sd / math.sqrt(3)
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


@pytest.mark.parametrize("speeds, ratios, status", [
    # ~2x faster in every seed: reaches Switch's final loss at step 1001 / 1201 / 1001 (not 1000: the curve's grid)
    ({1: 2.0, 2: 1.8, 3: 2.2}, [2000 / 1001, 2000 / 1201, 2000 / 1001], "supported"),
    # never reaches it: each seed counted as Switch's 2000 steps / the run's 2000, the bound 1
    ({1: 0.9, 2: 0.8, 3: 0.95}, [1.0, 1.0, 1.0], "contradicted"),
    # one seed 2x, one never, one 1.43x: the interval spans 1
    ({1: 2.0, 2: 0.9, 3: 1.5}, [2000 / 1001, 1.0, 2000 / 1401], "inconclusive"),
])
def test_speed_claim_from_planted_curves(speeds, ratios, status):
    page = build(arms(speeds))
    speed = char_claims(page)[1]
    assert speed.status == status and speed.kind == "paper" and "2.0x faster" in speed.text
    mean, lo, hi = hand_interval(ratios)
    assert speed.effect == pytest.approx(mean)
    assert speed.interval == pytest.approx((lo, hi))
    data = page.data["tinyshakespeare"]["steps_to_switch"]
    assert [r["ratio"] for r in data["rows"]] == pytest.approx(ratios)
    assert data["resolution_steps"] == 100 and data["n"] == 3
    assert "at this scale: character-level Tiny Shakespeare, a 1-layer d8 GPT" in speed.scale
    assert "2,000 steps of 12 x 64 characters = 1,536,000 training characters per run" in speed.scale
    assert "against the paper's 2x at GPT-MoE 1.5B on OpenWebText" in speed.evidence
    table = next(b for b in page.blocks if isinstance(b, Table) and b.header[0] == "seed")
    assert table.rows[-1][-1].endswith(status) and len(table.rows) == 4


def test_a_seed_that_never_reaches_the_target_is_said_and_bounded():
    page = build(arms({1: 2.0, 2: 0.9, 3: 1.5}))
    speed = char_claims(page)[1]
    assert "1: 2000/1001 = 2.00x" in speed.evidence
    assert "2: not reached by step 2000, counted as 1.00x (an upper bound, at most 1)" in speed.evidence
    table = next(b for b in page.blocks if isinstance(b, Table) and b.header[0] == "seed")
    assert table.rows[1][1:] == [f"{SWITCH_FINAL:.4f}", 2000, "not reached by 2000", "1.00x (bound)"]
    assert "the paper's 2x lies inside this interval" in speed.evidence


def test_outperform_claim_on_validation_loss_checked_by_hand():
    page = build(arms({1: 1.0, 2: 1.0, 3: 1.0}))
    outperform = char_claims(page)[0]
    assert outperform.status == "supported" and outperform.text.startswith("EvoMoE outperforms")
    # switch minus EvoMoE per seed: 0.10, 0.12, 0.08 -> mean 0.10, sd 0.02, half-width t * 0.02 / sqrt(3)
    half = T_975_2 * 0.02 / math.sqrt(3)
    assert f"switch: supported, 0.1000 [{0.1 - half:.4f}, {0.1 + half:.4f}]" in outperform.evidence
    assert "final validation loss (nats/char) of baseline minus EvoMoE" in outperform.evidence
    assert outperform.evidence.startswith("switch +0.100, base +0.120, hash +0.150: the mean of baseline minus EvoMoE;")
    assert outperform.scale.startswith("at this scale: character-level Tiny Shakespeare")
    # EvoMoE worse than Hash in every seed: contradicted overall
    worse = build(arms({1: 1.0, 2: 1.0, 3: 1.0}, hash={1: 1.80, 2: 1.81, 3: 1.79}))
    assert char_claims(worse)[0].status == "contradicted"


def test_scale_names_parameters_counted_by_hand():
    recs = arms({1: 1.0, 2: 1.0, 3: 1.0})
    # dense: embeddings 65 x 8 + 64 x 8, one block (LayerNorms 2 x 16, qkv 8 x 24 + 24, out 8 x 8 + 8,
    # FFN 8 x 16 + 16 and 16 x 8 + 8), final LayerNorm 16
    assert charclaims.parameters(recs["dense"]) == (1648, 1648)
    total, active = charclaims.parameters(recs["switch"])
    assert total > active > 1648  # four experts held, one used per token (plus the router)
    assert "dense 1,648 / 1,648" in charclaims.scale(recs)


@pytest.mark.parametrize("hash_seed2, testable", [(2.30, False), (FLOOR - 0.3 + 0.001, False),
                                                  (FLOOR - 0.3 - 0.001, True)])
def test_an_arm_short_of_the_floor_margin_makes_both_not_testable(hash_seed2, testable):
    page = build(arms({1: 2.0, 2: 1.8, 3: 2.2}, hash={1: 2.00, 2: hash_seed2, 3: 1.99}))
    statuses = [c.status for c in char_claims(page)]
    if testable:
        assert "not testable here" not in statuses
        return
    assert statuses == ["not testable here", "not testable here"]
    for claim in char_claims(page):
        assert f"worst seed of hash {hash_seed2:.3f}" in claim.evidence and "0.3 nats/char" in claim.evidence
        assert claim.scale.startswith("at this scale")  # the scale measured is still named
    assert char_claims(build(arms({1: 2.0, 2: 1.8, 3: 2.2}), floor=None))[0].status == "not testable here"


def test_missing_arms_are_not_run_and_wikitext2_verdicts_unchanged():
    recs = arms({1: 2.0, 2: 1.8, 3: 2.2})
    page = build({m: r for m, r in recs.items() if m != "hash"})
    outperform, speed = char_claims(page)
    assert outperform.status == "not run" and "no record yet of hash" in outperform.evidence
    assert speed.status == "supported"
    assert char_claims(build({m: r for m, r in recs.items() if m != "switch"}))[1].status == "not run"
    plain = build({})
    assert len(plain.claims) == 2 and char_claims(plain) == [] and len(page.claims) == 4
    assert [c.as_json() for c in page.claims[:2]] == [c.as_json() for c in plain.claims]
