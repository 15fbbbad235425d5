"""TA-MoE on the character-level Tiny Shakespeare protocol: its arms compose with the char protocol plus TA-MoE's
own cluster keys, match EvoMoE's GShard arm in active parameters, the windowed dispatch record is the mean of the
per-step one, the seed draws the windows, evaluate reports validation loss only; and one smoke run on the mirror."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import yaml
from omegaconf import OmegaConf

from replications.ta_moe import REPLICATION
from replications.ta_moe.charbench import active_parameters
from replications.ta_moe.train import fit, off_node_fraction
from shared.data.tinyshakespeare import split
from shared.runner import run
from shared.seeding import seed_everything
from tests.conftest import CONF, compose_cfg, needs_mirror
from tests.runs import run_of

ARMS = ["ta_moe/tinyshakespeare", "ta_moe_gshard", "ta_moe_fastermoe"]
TINY = ["paper=ta_moe", "dataset=tinyshakespeare", "tracker=none", "paper.protocol.steps=8",
        "paper.protocol.batch_size=8", "paper.protocol.seq_len=16", "paper.protocol.d_model=16",
        "paper.protocol.heads=2", "paper.protocol.layers=1", "paper.protocol.warmup_steps=2",
        "paper.protocol.curve_points=2", "paper.protocol.curve_valid_tokens=64", "model.ffn_hidden=32"]


def corpus():
    g = torch.Generator().manual_seed(0)
    text = "".join("abcdefghij"[int(i)] for i in torch.randint(0, 10, (3000,), generator=g))
    return split(text)


def train_tiny(choice: str, seed: int = 1, *over: str):
    cfg = compose_cfg(*TINY, f"model={choice}", *over)
    data = corpus()
    seed_everything(seed)
    model = REPLICATION.build_model(run_of(cfg), data)
    return fit(cfg, model, data.train, data.valid, lambda m, s: None, seed=seed), model, cfg


@pytest.mark.parametrize("arm", ARMS)
def test_every_arm_composes_with_the_char_protocol_and_keeps_tamoe_cluster(arm):
    cfg = compose_cfg("paper=ta_moe", "dataset=tinyshakespeare", f"model={arm}", "tracker=none")
    char = yaml.safe_load((CONF / "dataset" / "tinyshakespeare.yaml").read_text())["paper"]["protocol"]
    paper = yaml.safe_load((CONF / "paper" / "ta_moe.yaml").read_text())["protocol"]
    protocol = OmegaConf.to_container(cfg.paper.protocol)
    assert {k: protocol[k] for k in char} == char  # every key of the char block wins
    assert set(protocol) - set(char) == {"cluster", "gate_reduce_freq", "dispatch_window"}  # TA-MoE's own
    assert protocol["cluster"] == paper["cluster"] and protocol["steps"] == 2000 and protocol["layers"] == 4
    assert cfg.paper.protocol.batch_size % 4 == 0  # 12 sequences: 3 on each emulated rank
    # EvoMoE's Tiny Shakespeare GShard arm: 4 experts of 256, top-2 (two halves of the dense 512 FFN)
    gshard = compose_cfg("paper=evomoe", "dataset=tinyshakespeare", "model=evomoe_gshard", "tracker=none").model
    assert (cfg.model.num_experts, cfg.model.ffn_hidden) == (gshard.num_experts, gshard.ffn_hidden) == (4, 256)
    assert cfg.model.gate_options.get("k", 2) == 2


def test_the_two_arms_use_evomoe_gshards_active_parameters():
    data = split("".join(chr(40 + i) for i in range(65)) * 20)  # the protocol's 65-symbol vocabulary
    sizes = []
    for arm in ("ta_moe/tinyshakespeare", "ta_moe_gshard"):
        cfg = compose_cfg("paper=ta_moe", "dataset=tinyshakespeare", f"model={arm}", "tracker=none")
        sizes.append(active_parameters(REPLICATION.build_model(run_of(cfg), data), 2))
    # by hand: per layer 4 x 128^2 + 4 x 128 attention, 2 x 128 x 2 LayerNorms, one router 128 x 4 + 4, two of the
    # four experts (128 x 256 + 256 + 256 x 128 + 128 each); embeddings 65 x 128 + 64 x 128 (tied head), final LN
    layer = 4 * 128 * 128 + 4 * 128 + 4 * 128 + (128 * 4 + 4) + 2 * (2 * 128 * 256 + 256 + 128)
    assert sizes[0] == sizes[1] and sizes[0][1] == 4 * layer + 65 * 128 + 64 * 128 + 2 * 128 == 812_432
    assert sizes[0][0] == sizes[0][1] + 4 * (2 * (2 * 128 * 256 + 256 + 128) + 3 * (128 * 4 + 4))


def test_windowed_dispatch_is_the_mean_of_the_per_step_record():
    steps, _, _ = train_tiny("ta_moe/tinyshakespeare", 1, "paper.protocol.dispatch_window.tinyshakespeare=1")
    pairs, _, _ = train_tiny("ta_moe/tinyshakespeare", 1, "paper.protocol.dispatch_window.tinyshakespeare=3")
    per_step = torch.tensor(steps["dispatch"], dtype=torch.float64)  # [8, 1, 4, 4], ints
    assert steps["dispatch_window"] == 1 and pairs["dispatch_window"] == 3 and len(pairs["dispatch"]) == 3
    means = [per_step[0:3].mean(0), per_step[3:6].mean(0), per_step[6:8].mean(0)]  # the last window is shorter
    torch.testing.assert_close(torch.tensor(pairs["dispatch"], dtype=torch.float64), torch.stack(means))
    assert [p["off_node_fraction"] for p in steps["curve"]] == [p["off_node_fraction"] for p in pairs["curve"]]
    assert off_node_fraction(pairs["dispatch"][:2], 2) == pytest.approx(off_node_fraction(steps["dispatch"][:6], 2))


def test_a_dataset_without_a_window_is_refused_in_one_line():
    with pytest.raises(ValueError, match="dispatch_window has no positive window for dataset 'tinyshakespeare'"):
        train_tiny("ta_moe/tinyshakespeare", 1, "~paper.protocol.dispatch_window.tinyshakespeare")


def test_the_seed_draws_the_random_windows():
    a = train_tiny("ta_moe_gshard", 1)[0]
    b = train_tiny("ta_moe_gshard", 1)[0]
    seed_everything(1)  # same init, other windows: the seed reaches the batches, not only the init
    cfg = compose_cfg(*TINY, "model=ta_moe_gshard")
    data = corpus()
    c = fit(cfg, REPLICATION.build_model(run_of(cfg), data), data.train, data.valid, lambda m, s: None, seed=2)
    assert a["dispatch"] == b["dispatch"] and a["curve"][0]["train_nll"] == b["curve"][0]["train_nll"]
    assert a["curve"][0]["train_nll"] != c["curve"][0]["train_nll"]


def test_evaluate_reports_validation_loss_and_no_test():
    data = corpus()
    spec = run_of(compose_cfg(*TINY, "model=ta_moe/tinyshakespeare", "paper.protocol.steps=3"))
    model = REPLICATION.build_model(spec, data)
    summary = REPLICATION.train(spec, model, data, 1, lambda m, s: None)
    metrics = REPLICATION.evaluate(spec, model, data, 1, summary)
    assert "test_ppl" not in metrics and metrics["valid_ppl"] == pytest.approx(math.exp(metrics["valid_loss"]))
    assert 0 <= metrics["off_node_fraction_last10pct"] <= 1 and metrics["dropped_fraction"] > 0


def test_make_replicate_narrowed_to_the_dataset_plans_both_arms():
    from replications.replicate import plan_configs

    plan = plan_configs("ta_moe", ["dataset=tinyshakespeare"])  # replicate.models_for: the two arms
    assert [(d, c.model.name, c.model.topology_aware) for d, _, c in plan] == [
        ("tinyshakespeare", "ta_moe", True), ("tinyshakespeare", "gshard", False)]
    assert all(c.paper.protocol.batches == "random" and c.paper.protocol.seeds == [1, 2, 3] for _, _, c in plan)


@pytest.mark.slow
@needs_mirror
def test_smoke_run_on_the_mirror(tmp_path: Path, fresh_cache):
    from shared.smoke import apply_smoke

    for choice in ("ta_moe/tinyshakespeare", "ta_moe_gshard"):
        cfg = compose_cfg("paper=ta_moe", "dataset=tinyshakespeare", f"model={choice}", "scale=smoke",
                          "tracker=none", "scale.max_epochs=10", f"paths.results_dir={tmp_path}")
        apply_smoke(cfg)
        record = run(cfg, REPLICATION)
        assert record["complete"] and record["aggregate"]["valid_loss"]["mean"] < math.log(65)
        assert len(record["runs"][0]["train"]["dispatch"]) == 1  # 10 steps: one (short) window of 20


# --- the claims on this dataset, from hand-made records ----------------------------------------------------------

FLOOR = 2.484  # the character bigram's validation loss (planted: the real one needs the data)


def char_dispatch(near: int) -> list[list[list[list[float]]]]:
    """10 window means of one layer on 2 x 2 ranks: `near` of each rank's 8 kept assignments stay on its node."""
    far = 8 - near
    row = [near / 2, near / 2, far / 2, far / 2]
    return [[[row, row, row[2:] + row[:2], row[2:] + row[:2]]] for _ in range(10)]


def char_record(model: str, losses: dict[int, float], near: int) -> dict:
    choice = "ta_moe/tinyshakespeare" if model == "ta_moe" else "ta_moe_gshard"
    config = OmegaConf.to_container(compose_cfg("paper=ta_moe", "dataset=tinyshakespeare", f"model={choice}",
                                                "tracker=none"), resolve=True)
    off = off_node_fraction(char_dispatch(near), 2)
    runs = [{"seed": s, "metrics": {"valid_loss": v, "valid_ppl": math.exp(v), "off_node_fraction_last10pct": off},
             "train": {"dispatch": char_dispatch(near), "dispatch_window": 20, "steps": 2000,
                       "train_tokens": 2000 * 12 * 64, "cluster": {"intra_mbit": 8000.0, "inter_mbit": 400.0}}}
            for s, v in losses.items()]
    agg = {k: {"mean": 1.0, "std": 0.0, "n": len(runs), "ci95_low": 1.0, "ci95_high": 1.0}
           for k in ("valid_loss", "valid_ppl", "off_node_fraction", "off_node_fraction_last10pct",
                     "local_rank_fraction", "dropped_fraction", "train_tokens_per_s")}
    return {"dataset": "tinyshakespeare", "model": model, "complete": True, "runs": runs, "aggregate": agg,
            "wall_seconds": 600.0, "environment": {"hardware": {"cpu": "test cpu", "torch_threads": 1}},
            "config": config}


def char_claims(ta: dict | None, gs: dict | None, floor: float | None = FLOOR, monkeypatch=None):
    """{claim id: Claim} of paper.yaml's specs on Tiny Shakespeare records (the bigram floor planted)."""
    from replications.moe import charfloor
    from replications.ta_moe import report
    from shared.claims import paper_claims
    from shared.report.paper_hook import PaperResults

    records = {("tinyshakespeare", m): r for m, r in (("ta_moe", ta), ("gshard", gs)) if r is not None}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(charfloor, "bigram_floor", lambda: floor)
        claims = paper_claims(report.PAPER, PaperResults("ta_moe", Path("/nonexistent/ta_moe"), records))
    return {c.id: c for c in claims if c.dataset == "tinyshakespeare"}


GS = {1: 1.700, 2: 1.710, 3: 1.705}


def test_no_loss_within_the_margin_and_fewer_off_node_tokens_are_supported():
    ta = char_record("ta_moe", {1: 1.702, 2: 1.711, 3: 1.708}, near=7)  # +0.002 nats/char, well inside ln 1.02
    claims = char_claims(ta, char_record("gshard", GS, near=4))
    acc, ladder = claims.values()
    assert acc.status == "supported" and acc.interval[1] <= math.log(1.02) == pytest.approx(0.0198, abs=1e-4)
    assert acc.effect == pytest.approx(0.002) and "nats/char" in acc.unit
    assert ladder.status == "supported" and ladder.effect == pytest.approx(1 / 8 - 1 / 2)
    assert all(c.short.endswith("(tinyshakespeare)") for c in claims.values())
    # the scale: active parameters (by hand above), characters and steps per run, and the claim's far above it
    assert "0.81M active" in acc.scale and "2,000 steps, 1,536,000 training tokens per run" in acc.scale
    assert acc.display_status == "supported at 0.81M params (claim: 150M)"


def test_a_clear_loss_and_more_off_node_tokens_are_contradicted():
    ta = char_record("ta_moe", {1: 1.760, 2: 1.772, 3: 1.764}, near=2)  # +0.06 nats/char: 3x the margin
    claims = char_claims(ta, char_record("gshard", GS, near=4))
    assert [c.status for c in claims.values()] == ["contradicted", "contradicted"]


def test_an_interval_straddling_the_margin_is_inconclusive():
    ta = char_record("ta_moe", {1: 1.690, 2: 1.760, 3: 1.720}, near=4)  # noisy loss
    for one, off in zip(ta["runs"], (0.45, 0.56, 0.50)):  # and off-node shares around GShard's 0.5
        one["metrics"]["off_node_fraction_last10pct"] = off
    claims = char_claims(ta, char_record("gshard", GS, near=4))
    assert [c.status for c in claims.values()] == ["inconclusive", "inconclusive"]


def test_an_arm_above_the_bigram_floor_makes_both_claims_untestable():
    ta = char_record("ta_moe", {1: 1.702, 2: 2.600, 3: 1.708}, near=7)  # one seed never got past character pairs
    claims = char_claims(ta, char_record("gshard", GS, near=4))
    assert [c.status for c in claims.values()] == ["not testable here"] * 2
    assert all("ta_moe 2.600" in c.evidence and "2.484" in c.evidence for c in claims.values())
    claims = char_claims(char_record("ta_moe", GS, near=7), char_record("gshard", GS, near=4), floor=None)
    assert [c.status for c in claims.values()] == ["not testable here"] * 2  # no floor known: nothing is judged
    claims = char_claims(char_record("ta_moe", GS, near=7), None)
    assert [c.status for c in claims.values()] == ["not run"] * 2


def test_an_arm_below_the_floor_but_within_the_margin_is_still_untestable():
    # 2.300 is below the bigram (2.484) but not 0.3 below it (2.184): EvoMoE's rule, replications/moe/charfloor.py
    ta = char_record("ta_moe", {1: 1.702, 2: 2.300, 3: 1.708}, near=7)
    claims = char_claims(ta, char_record("gshard", GS, near=4))
    assert [c.status for c in claims.values()] == ["not testable here"] * 2
    assert all("0.3 nats/char below" in c.evidence and "ta_moe 2.300" in c.evidence for c in claims.values())
    ta = char_record("ta_moe", {1: 1.702, 2: 2.180, 3: 1.708}, near=7)  # just past the margin: judged
    claims = char_claims(ta, char_record("gshard", GS, near=4))
    assert "not testable here" not in [c.status for c in claims.values()]


def test_the_page_shows_both_datasets_verdicts(tmp_path, monkeypatch):
    from replications.moe import charfloor
    from replications.ta_moe import measures, report
    from shared.report.paper_hook import PaperResults
    from shared.report.paper_page import render_page
    from tests.test_ta_moe_train import hand_record

    real = measures.parameters
    monkeypatch.setattr(measures, "parameters", lambda r: (1, 1) if r["dataset"] == "wikitext2" else real(r))
    records = {("wikitext2", m): hand_record(m, {1: 100.0, 2: 101.0}, near=n) for m, n in (("gshard", 4), ("ta_moe", 7))}
    records[("tinyshakespeare", "ta_moe")] = char_record("ta_moe", {1: 1.702, 2: 1.711, 3: 1.708}, near=7)
    records[("tinyshakespeare", "gshard")] = char_record("gshard", GS, near=4)
    monkeypatch.setattr(charfloor, "bigram_floor", lambda: FLOOR)
    page = report.build(PaperResults("ta_moe", tmp_path, records))
    assert [c.status for c in page.claims] == ["not testable here", "not run"] + ["supported"] * 4
    assert [c.dataset for c in page.claims] == [None, "wikitext2", "wikitext2", "tinyshakespeare", "wikitext2",
                                                "tinyshakespeare"]
    assert page.data["tinyshakespeare"]["bigram_valid_loss"] == FLOOR
    text = render_page("ta_moe", page)
    assert "## Character-level Tiny Shakespeare" in text and "tinyshakespeare_dispatch.png" in text
    assert [len(f.draw().get_axes()) for f in page.figures()] == [3, 3]  # 2 arms + the off-node curve, each
    monkeypatch.setattr(charfloor, "bigram_floor", lambda: 1 / 0)  # not called without Tiny Shakespeare records
    wikitext_only = {k: v for k, v in records.items() if k[0] == "wikitext2"}
    unchanged = report.build(PaperResults("ta_moe", tmp_path, wikitext_only))
    assert [c.status for c in unchanged.claims if c.dataset == "tinyshakespeare"] == ["not run"] * 2
    assert "tinyshakespeare" not in unchanged.data
