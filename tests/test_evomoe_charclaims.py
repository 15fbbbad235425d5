"""EvoMoE's claims judged on Tiny Shakespeare by its paper.yaml specs, from hand-made records with planted curves:
the speed claim's ratio of steps (a censored seed as a bound) and its interval, one outperform verdict per named
baseline on validation loss (checked by hand), the scale reached (parameters counted by hand) beside the claim's,
and the bigram floor's margin that makes a claim on an arm short of it `not testable here`."""

from __future__ import annotations

import math

import pytest

from replications.evomoe import measures, report
from replications.moe import charfloor, scale
from shared.claims.display import params_text
from shared.report.paper_hook import PaperResults, Table
from shared.stats import summarize
from tests.conftest import needs_mirror

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


@pytest.fixture(autouse=True)
def floor(monkeypatch):
    """The character bigram floor without the data (charfloor.requirement reads it by name)."""
    monkeypatch.setattr(charfloor, "bigram_floor", lambda: FLOOR)


def build(chars: dict[str, dict]):
    return report.build(PaperResults("evomoe", report.PAPER.parent, {("tinyshakespeare", m): r for m, r in chars.items()}))


def char_claims(page) -> dict[str, object]:
    return {c.id: c for c in page.claims if c.dataset == "tinyshakespeare"}


def hand_interval(values: list[float]) -> tuple[float, float, float]:
    mean = sum(values) / 3
    half = T_975_2 * math.sqrt(sum((v - mean) ** 2 for v in values) / 2) / math.sqrt(3)
    return mean, mean - half, mean + half


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
    speed = char_claims(page)["faster_chars"]
    assert speed.status == status and speed.kind == "paper" and "2.0x faster" in speed.text
    mean, lo, hi = hand_interval(ratios)
    assert speed.effect == pytest.approx(mean)
    assert speed.interval == pytest.approx((lo, hi))
    assert [r["ratio"] for r in page.data["tinyshakespeare"]["steps_to_switch"]] == pytest.approx(ratios)
    assert speed.display_status.startswith(f"{status} at ") and speed.display_status.endswith(" params (claim: 1.5B)")
    table = next(b for b in page.blocks if isinstance(b, Table) and b.header[0] == "seed")
    assert len(table.rows) == 3
    if status == "contradicted":  # every seed censored: a bound, never "1x [1, 1]"
        assert speed.evidence.startswith("not reached in 2000 steps (<= 1.00x)")


def test_a_seed_that_never_reaches_the_target_is_said_and_bounded():
    page = build(arms({1: 2.0, 2: 0.9, 3: 1.5}))
    table = next(b for b in page.blocks if isinstance(b, Table) and b.header[0] == "seed")
    assert table.rows[0][1:] == [f"{SWITCH_FINAL:.4f}", 2000, 1001, "2.00x"]
    assert table.rows[1][1:] == [f"{SWITCH_FINAL:.4f}", 2000, "not reached by 2000", "1.00x (bound)"]


def test_outperform_claims_on_validation_loss_checked_by_hand():
    found = char_claims(build(arms({1: 1.0, 2: 1.0, 3: 1.0})))
    assert [found[f"beats_{b}_chars"].status for b in ("switch", "base", "hash")] == ["supported"] * 3
    switch = found["beats_switch_chars"]
    # switch minus EvoMoE per seed: 0.10, 0.12, 0.08 -> mean 0.10, sd 0.02, half-width t * 0.02 / sqrt(3)
    half = T_975_2 * 0.02 / math.sqrt(3)
    assert switch.effect == pytest.approx(0.1) and switch.interval == pytest.approx((0.1 - half, 0.1 + half))
    assert switch.evidence.startswith(f"+0.1 [{0.1 - half:+.3g}, {0.1 + half:+.3g}] nats/char (95% t, n = 3)")
    assert switch.text.startswith("EvoMoE outperforms") and switch.short.endswith("than Switch (tinyshakespeare)")
    # EvoMoE worse than Hash in every seed: that baseline's verdict is contradicted, the others' stay
    worse = char_claims(build(arms({1: 1.0, 2: 1.0, 3: 1.0}, hash={1: 1.80, 2: 1.81, 3: 1.79})))
    assert [worse[f"beats_{b}_chars"].status for b in ("switch", "base", "hash")] == ["supported"] * 2 + ["contradicted"]


def test_scale_names_parameters_counted_by_hand():
    recs = arms({1: 1.0, 2: 1.0, 3: 1.0})
    # dense: embeddings 65 x 8 + 64 x 8, one block (LayerNorms 2 x 16, qkv 8 x 24 + 24, out 8 x 8 + 8,
    # FFN 8 x 16 + 16 and 16 x 8 + 8), final LayerNorm 16
    assert measures.parameters(recs["dense"]) == (1648, 1648)
    total, active = measures.parameters(recs["evomoe"])
    assert total > active > 1648  # four experts held, one used per token (plus the router)
    claim = char_claims(build(recs))["beats_switch_chars"]
    assert (claim.reached_scale["params"], claim.reached_scale["active_params"]) == (total, active)
    assert claim.reached_scale["steps"] == 2000 and claim.reached_scale["tokens"] == 2000 * 12 * 64
    assert claim.scale_ratio == pytest.approx(active / 1.5e9)
    assert claim.scale_note == f"at {params_text(active)} params (claim: 1.5B)"
    assert claim.scale.startswith("evomoe: a 1-layer d8 GPT") and "2,000 steps, 1,536,000 training tokens" in claim.scale


@pytest.mark.parametrize("hash_seed2, testable", [(2.30, False), (FLOOR - 0.3 + 0.001, False),
                                                  (FLOOR - 0.3 - 0.001, True)])
def test_an_arm_short_of_the_floor_margin_makes_its_claim_not_testable(hash_seed2, testable):
    found = char_claims(build(arms({1: 2.0, 2: 1.8, 3: 2.2}, hash={1: 2.00, 2: hash_seed2, 3: 1.99})))
    hash_claim = found["beats_hash_chars"]
    # the precondition reads the claim's own arms: Switch's and the speed claim's verdicts stand
    assert found["beats_switch_chars"].status == "supported" and found["faster_chars"].status == "supported"
    if testable:
        assert hash_claim.status == "inconclusive"  # judged: differences 0.15, 0.343, 0.13 (a wide interval)
        return
    assert hash_claim.status == "not testable here"
    assert f"worst seed of hash {hash_seed2:.3f}" in hash_claim.evidence and "0.3 nats/char" in hash_claim.evidence
    assert "; measured: +0." in hash_claim.evidence and hash_claim.effect is not None  # the measure is still shown


def test_missing_arms_are_not_run():
    recs = arms({1: 2.0, 2: 1.8, 3: 2.2})
    found = char_claims(build({m: r for m, r in recs.items() if m != "hash"}))
    assert found["beats_hash_chars"].status == "not run" and "no record of hash on tinyshakespeare" in \
        found["beats_hash_chars"].evidence
    assert found["faster_chars"].status == "supported"
    found = char_claims(build({m: r for m, r in recs.items() if m != "switch"}))
    assert found["faster_chars"].status == "not run" and found["faster_chars"].evidence.startswith("no record of switch")


@needs_mirror
def test_the_vocabularies_models_are_rebuilt_with(fresh_cache):
    from replications.moe import corpora

    assert {name: len(load().vocab) for name, load in corpora.LOADERS.items()} == scale.VOCAB
