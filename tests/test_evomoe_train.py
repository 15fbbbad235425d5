"""EvoMoE's training protocol on a tiny synthetic stream: the phases happen when configured, expert
diversification copies expert 0, the same seed gives the same numbers, evaluate reads train's summary; and one
smoke run on the mirror whose records build the page."""

from __future__ import annotations

import json

import pytest
import torch

from replications.evomoe import REPLICATION
from replications.evomoe.train import diversify, fit
from replications.moe.wikitext import Corpus
from shared.runner import run
from shared.seeding import seed_everything
from tests.conftest import compose_cfg, needs_mirror
from tests.golden import check_golden
from tests.runs import run_of

TINY = ["paper=evomoe", "dataset=wikitext2", "scale=smoke", "tracker=none", "paper.protocol.steps=20",
        "scale.max_epochs=null", "paper.protocol.batch_size=4", "paper.protocol.seq_len=8",
        "paper.protocol.d_model=16", "paper.protocol.heads=2", "paper.protocol.layers=1",
        "paper.protocol.warmup_steps=2", "paper.protocol.cutoffs=[20,40]", "paper.protocol.curve_points=20",
        "paper.protocol.curve_valid_tokens=64"]

# Golden smoke values (tests/golden/evomoe.json): every metric of the smoke record but train_tokens_per_s, a
# wall-clock throughput (2-5% apart between two runs); the rest was bit-identical.
LEFT_OUT = {"train_tokens_per_s"}


def tiny_corpus() -> Corpus:
    g = torch.Generator().manual_seed(0)
    return Corpus([f"w{i}" for i in range(60)], torch.randint(0, 60, (4000,), generator=g),
                  torch.randint(0, 60, (500,), generator=g), torch.randint(0, 60, (500,), generator=g))


def train_tiny(model_choice: str, seed: int = 1, **over):
    cfg = compose_cfg(*TINY, f"model={model_choice}", "model.ffn_hidden=32", *[f"{k}={v}" for k, v in over.items()])
    data = tiny_corpus()
    seed_everything(seed)
    model = REPLICATION.build_model(run_of(cfg), data)
    return fit(cfg, model, data.train, data.valid, seed, lambda m, s: None), model


def test_evomoe_phases_follow_the_config():
    summary, _ = train_tiny("evomoe/wikitext2")  # 20 steps: diversify 2, decay 8, hard from step 12
    curve = {p["step"]: p for p in summary["curve"]}
    assert curve[1]["active_experts"] == 1 and curve[1]["temperature"] is None  # one dense expert
    assert curve[3]["active_experts"] > 3 and curve[3]["temperature"] == pytest.approx(2.0)  # dense-ish DTS
    assert curve[11]["temperature"] == pytest.approx(0.1)  # t_min reached decay_frac * steps after diversify
    assert curve[20]["active_experts"] == 1  # hard top-1 phase
    assert 1 < summary["mean_active_experts"] < 4


def test_same_seed_same_numbers_and_seeds_differ():
    a, _ = train_tiny("evomoe_switch", seed=1)
    b, _ = train_tiny("evomoe_switch", seed=1)
    c, _ = train_tiny("evomoe_switch", seed=2)
    assert [p["train_nll"] for p in a["curve"]] == [p["train_nll"] for p in b["curve"]]
    assert a["curve"][-1]["train_nll"] != c["curve"][-1]["train_nll"]


def test_diversify_copies_expert_zero_with_noise():
    _, model = train_tiny("evomoe/wikitext2", **{"paper.protocol.steps": 1})
    layer = model.moe_layers()[0]
    opt = torch.optim.AdamW(model.parameters())
    diversify(model, opt, 0.0, torch.Generator().manual_seed(0))
    assert torch.equal(layer.w1[1], layer.w1[0]) and torch.equal(layer.w2[3], layer.w2[0])
    diversify(model, opt, 0.1, torch.Generator().manual_seed(0))
    rel = (layer.w1[1] - layer.w1[0]).detach().abs() / layer.w1[0].abs().clamp_min(1e-12)
    assert 0 < float(rel.mean()) < 0.2


def test_dense_and_every_baseline_train():
    for choice in ("evomoe_dense", "evomoe_gshard", "evomoe_hash", "evomoe_base"):
        summary, _ = train_tiny(choice, **{"paper.protocol.steps": 6})
        nll = [p["train_nll"] for p in summary["curve"]]
        assert all(torch.isfinite(torch.tensor(nll))) and nll[-1] < nll[0], choice


def test_evaluate_reads_trains_summary_and_keeps_no_state():
    cfg = compose_cfg(*TINY, "model=evomoe_switch", "model.ffn_hidden=32", "paper.protocol.steps=3")
    data, spec = tiny_corpus(), run_of(cfg)
    model = REPLICATION.build_model(spec, data)
    summary = REPLICATION.train(spec, model, data, 1, lambda m, s: None)
    assert vars(REPLICATION) == {}  # nothing of the run on the module-level object
    faked = {**summary, "train_tokens_per_s": 123.0, "mean_active_experts": 0.5}
    metrics = REPLICATION.evaluate(spec, model, data, 1, faked)
    assert metrics["train_tokens_per_s"] == 123.0 and metrics["mean_active_experts"] == 0.5
    assert 1 < metrics["test_ppl"] < 1000 and "steps_to_target" not in metrics


@pytest.mark.slow
@needs_mirror
def test_smoke_run_on_the_mirror_writes_results_and_the_page(tmp_path, fresh_cache):
    from shared.report.paper_hook import load_paper_results
    from shared.report.paper_page import write_paper

    cfg = compose_cfg("paper=evomoe", "dataset=wikitext2", "model=evomoe/wikitext2", "scale=smoke",
                      "tracker=none", "scale.max_epochs=10", f"paths.results_dir={tmp_path}")
    record = run(cfg, REPLICATION)
    assert record["complete"] and set(record["aggregate"]) >= {"valid_ppl", "test_ppl", "mean_active_experts"}
    assert 1 < record["aggregate"]["test_ppl"]["mean"] < 33278  # learnt something: below a uniform guess
    means = {m: a["mean"] for m, a in record["aggregate"].items() if m not in LEFT_OUT}
    check_golden("evomoe", f"{record['dataset']}/{record['model']}", means)
    assert json.loads((tmp_path / "evomoe" / "wikitext2" / "evomoe.json").read_text())["runs"][0]["train"]["curve"]
    page = REPLICATION.report(load_paper_results(tmp_path, "evomoe"))
    # no baseline record beside EvoMoE's: every judged claim not run; the FLOPs claim is not testable here at all
    assert [c.status for c in page.claims] == ["not run"] * 8 + ["not testable here"]
    write_paper(tmp_path / "evomoe", "evomoe", page)
    assert (tmp_path / "evomoe" / "wikitext2_curves.png").stat().st_size > 0
    assert "| evomoe |" in (tmp_path / "evomoe" / "README.md").read_text()


def test_per_seed_jobs_merge_into_one_record(tmp_path):
    # Seeds run as separate processes are combined by shared.merge with EvoMoE's paper file.
    from shared.merge import merge_records

    def merge(paths):
        return merge_records([json.loads(p.read_text()) for p in paths], REPLICATION.paper_file, [str(p) for p in paths])

    def record(seed: int, ppl: float) -> dict:
        return {"paper": "evomoe", "dataset": "wikitext2", "model": "switch", "scale": "full", "complete": True,
                "runs": [{"seed": seed, "metrics": {"test_ppl": ppl}, "train": {}, "wall_seconds": 1.0}],
                "wall_seconds": 2.0, "data_seconds": 1.0, "peak_memory_mb": 10.0, "config": {"seed": seed}}

    paths = []
    for seed, ppl in [(2, 110.0), (1, 100.0), (3, 120.0)]:
        paths.append(tmp_path / f"s{seed}.json")
        paths[-1].write_text(json.dumps(record(seed, ppl)))
    merged = merge(paths)
    assert [r["seed"] for r in merged["runs"]] == [1, 2, 3]
    assert merged["aggregate"]["test_ppl"]["mean"] == pytest.approx(110.0)
    assert merged["aggregate"]["test_ppl"]["n"] == 3 and merged["wall_seconds"] == 6.0
    with pytest.raises(ValueError, match="twice"):
        merge(paths + paths[:1])


def test_bf16_autocast_and_device_plumbing_run_on_cpu():
    # The GPU protocol's precision path (torch.autocast bf16), exercised on CPU: finite, decreasing loss.
    summary, model = train_tiny("evomoe_switch", **{"paper.protocol.steps": 6, "+paper.protocol.precision": "bf16",
                                                    "+paper.protocol.target_valid_ppl": 1e9})
    nll = [p["train_nll"] for p in summary["curve"]]
    assert all(torch.isfinite(torch.tensor(nll))) and nll[-1] < nll[0]
    assert summary["steps_to_target"] == 1.0  # any model reaches PPL 1e9 at the first curve point
    assert next(model.parameters()).dtype == torch.float32  # fp32 master weights
    cfg = compose_cfg(*TINY, "model=evomoe_switch", "device=mps")
    with pytest.raises(ValueError, match="cpu or cuda"):
        REPLICATION.build_model(run_of(cfg), tiny_corpus())
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no GPU"):
            REPLICATION.build_model(run_of(compose_cfg(*TINY, "model=evomoe_switch", "device=cuda")), tiny_corpus())


def test_gpu_protocol_config_composes():
    cfg = compose_cfg("paper=evomoe_gpu", "dataset=wikitext2", "model=evomoe/wikitext2", "tracker=none")
    p = cfg.paper.protocol
    assert cfg.paper.name == "evomoe" and p.precision == "bf16" and p.d_model == 512 and p.steps == 1000
    assert p.weight_decay == 0.1 and p.clip_norm == 5.0  # inherited from the CPU protocol


def test_kneser_ney_bigram_by_hand():
    from replications.evomoe.ngram import kneser_ney_bigram_ppl

    # train 0 1 0 1 0 2: c(0.)=3, c(1.)=2; N1+(0.)=2, N1+(1.)=1; continuation counts +1: [2, 2, 2] -> 1/3 each.
    # P(1|0) = (2 - .75)/3 + .75 * 2/3 * 1/3 = 1.75/3;  P(2|1) = 0 + .75 * 1/2 * 1/3 = 0.125
    ppl = kneser_ney_bigram_ppl(torch.tensor([0, 1, 0, 1, 0, 2]), torch.tensor([0, 1, 2]), 3)
    assert ppl == pytest.approx((1.75 / 3 * 0.125) ** -0.5)
