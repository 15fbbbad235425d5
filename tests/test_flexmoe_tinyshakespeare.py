"""FlexMoE's traces on the character-level protocol (conf/dataset/tinyshakespeare.yaml): the narrowed plan composes
(nanoGPT's CPU run, one trace source per sequence, E = 8 at ~0.81M active parameters per token) while WikiText-2's
config stays as its records hold it; a tiny character run records every routed choice per source, repeats with the
seed, reads other windows with another seed, and evaluates validation only; the page judges the premise on
synthetic Tiny Shakespeare traces beside WikiText-2's (whose verdicts its records alone decide), naming each scale;
one smoke run on the mirror."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from replications.flexmoe import REPLICATION, measures, report, stats, trace_path
from replications.flexmoe.charbench import active_parameters
from replications.flexmoe.train import fit
from replications.moe import charfloor
from replications.replicate import plan_configs
from shared.report.paper_hook import PaperResults
from shared.runner import run
from shared.seeding import seed_everything
from tests.conftest import CONF, compose_cfg, needs_mirror
from tests.runs import run_of
from tests.test_flexmoe_protocol import tiny_results  # WikiText-2 records with a planted, moving hot expert

NARROWED = ["dataset=tinyshakespeare"]  # conf/paper/flexmoe.yaml's header command: replicate.models_for narrows it
TINY = ["paper=flexmoe", "dataset=tinyshakespeare", "tracker=none", "paper.protocol.steps=6",
        "paper.protocol.batch_size=6", "paper.protocol.seq_len=8", "paper.protocol.d_model=16", "paper.protocol.heads=2",
        "paper.protocol.layers=2", "paper.protocol.warmup_steps=2", "paper.protocol.curve_points=2",
        "paper.protocol.curve_valid_tokens=64", "paper.protocol.window=2", "model.ffn_hidden=32"]


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    # the Tiny Shakespeare premise needs every run below the character bigram (charfloor.requirement): the committed
    # page's floor, so no data is read
    monkeypatch.setattr(charfloor, "bigram_floor", lambda: 2.4837202444041764)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def char_corpus(n: int = 4000, vocab: int = 65) -> SimpleNamespace:
    """A random character stream of `vocab` symbols, split as nanoGPT does (90/10), no test part."""
    g = torch.Generator().manual_seed(0)
    stream = torch.randint(vocab, (n,), generator=g)
    return SimpleNamespace(vocab=[chr(33 + i) for i in range(vocab)], train=stream[: n * 9 // 10],
                           valid=stream[n * 9 // 10:], test=None)


def test_the_narrowed_plan_is_nanogpts_cpu_run_with_one_trace_source_per_sequence():
    configs = plan_configs("flexmoe", NARROWED)
    # the result names (records: results/flexmoe/tinyshakespeare/<name>.json)
    assert [(d, cfg.model.name) for d, _, cfg in configs] == [("tinyshakespeare", "switch_e8"),
                                                              ("tinyshakespeare", "gshard_e8")]
    for _, _, cfg in configs:
        p = cfg.paper.protocol
        assert (p.steps, p.batch_size, p.seq_len, p.layers, p.d_model, list(p.seeds)) == (2000, 12, 64, 4, 128, [1, 2, 3])
        assert p.trace_sources == 12 and p.window == 10 and p.cutoffs is None  # 12 sources: 16 would not divide 12
        assert cfg.model.num_experts == 8 and cfg.paper.protocol.simulator.flexmoe.interval == 10
    assert [cfg.model.gate for _, _, cfg in configs] == ["switch", "gshard"]
    data = char_corpus()
    for _, _, cfg in configs:  # equal active parameters per token, ~0.81M as EvoMoE's TS arms
        _, active = active_parameters(REPLICATION.build_model(run_of(cfg), data), cfg)
        assert 0.80e6 < active < 0.83e6, (cfg.model.name, active)


def test_models_for_narrows_only_its_dataset_and_model_still_wins():
    assert [m for _, m, _ in plan_configs("flexmoe", ["dataset=wikitext2"])] == [
        "flexmoe", "flexmoe_switch_e16", "flexmoe_gshard_e8", "flexmoe_gshard_e16"]  # WikiText-2: all four arms
    both = [(d, m) for d, m, _ in plan_configs("flexmoe", ["dataset=wikitext2,tinyshakespeare"])]
    assert both[-2:] == [("tinyshakespeare", "flexmoe"), ("tinyshakespeare", "flexmoe_gshard_e8")] and len(both) == 6
    assert [m for _, m, _ in plan_configs("flexmoe", ["dataset=tinyshakespeare", "model=switch_e16"])] == ["switch_e16"]


def test_wikitext2_protocol_is_the_one_its_records_hold():
    assert compose_cfg("paper=flexmoe", "dataset=wikitext2", "tracker=none").paper.protocol.trace_sources == 16
    for record in sorted((CONF.parent / "results" / "flexmoe" / "wikitext2").glob("*.json")):
        saved = json.loads(record.read_text())
        if "config" not in saved or record.name.endswith(".partial.json"):
            continue
        choice = "flexmoe/wikitext2" if saved["model"] == "switch_e8" else f"flexmoe_{saved['model']}"
        cfg = OmegaConf.to_container(compose_cfg("paper=flexmoe", "dataset=wikitext2", f"model={choice}"), resolve=True)
        assert cfg["model"] == saved["config"]["model"], record.name
        protocol = dict(saved["config"]["paper"]["protocol"])
        moved = protocol.pop("threads", None)  # records before conf/config.yaml's `threads` kept the count here
        assert cfg["paper"]["protocol"] == protocol and cfg["threads"] == saved["config"].get("threads", moved), record.name


def train_tiny(choice: str, seed: int):
    cfg = compose_cfg(*TINY, f"model={choice}")
    data = char_corpus()
    seed_everything(seed)
    model = REPLICATION.build_model(run_of(cfg), data)
    return fit(cfg, model, data.train, data.valid, lambda m, s: None, seed), model, cfg, data


@pytest.mark.parametrize("choice, k", [("flexmoe/tinyshakespeare", 1), ("flexmoe_gshard_e8", 2)])
def test_char_traces_count_every_routed_choice_per_sequence(choice, k):
    (summary, routed, kept), model, cfg, data = train_tiny(choice, 1)
    assert routed.shape == (6, 2, 6, 8) and kept.shape == (6, 2, 8)  # steps, layers, 6 sources = 6 sequences, E
    assert (routed.sum(-1) == k * 8).all()  # each source: one sequence of 8 characters, k choices each
    assert (kept <= routed.sum(2)).all()


def test_same_seed_same_trace_other_seed_other_windows():
    a, b, c = (train_tiny("flexmoe/tinyshakespeare", s)[0][1] for s in (1, 1, 2))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_evaluate_reports_validation_only_where_the_corpus_has_no_test_part(tmp_path):
    cfg = compose_cfg(*TINY, "model=flexmoe/tinyshakespeare")
    run_ = run_of(cfg, output_dir=tmp_path / "flexmoe" / "tinyshakespeare")
    data = char_corpus()
    seed_everything(1)
    model = REPLICATION.build_model(run_, data)
    summary = REPLICATION.train(run_, model, data, 1, lambda m, s: None)
    assert trace_path(run_, 1).name == "tinyshakespeare_switch_e8_s1.npz" and trace_path(run_, 1).exists()
    metrics = REPLICATION.evaluate(run_, model, data, 1, summary)
    assert "test_ppl" not in metrics and metrics["valid_ppl"] == pytest.approx(np.exp(metrics["valid_loss"]))
    assert 3.0 < metrics["valid_loss"] < 6.0 and metrics["imbalance_second_half"] >= 1  # ln 65 = 4.17 at chance


def char_trace(rng: np.random.Generator, steps: int, kind: str) -> np.ndarray:
    """routed [steps, 4 layers, 12 sources, 8 experts], 64 choices per source: 'balanced' = exactly 8 per expert
    every step (max/mean 1, no change at all); 'static_hot' = expert 0 draws half of them, the same every step
    (imbalanced, changing by multinomial noise only); 'moving_hot' = the hot expert moves every 10 steps."""
    out = np.zeros((steps, 4, 12, 8), dtype=np.int16)
    for t in range(steps):
        if kind == "balanced":
            out[t] = 8
            continue
        p = np.full(8, 0.5 / 7)
        p[0 if kind == "static_hot" else (t // 10) % 8] = 0.5
        out[t] = rng.multinomial(64, p, size=(4, 12))
    return out


def char_results(folder, kind: str, steps: int = 200) -> dict:
    """The two E = 8 Tiny Shakespeare records as the runner writes them (2 seeds), with `kind` traces."""
    rng = np.random.default_rng(1)
    records = {}
    for choice in ("flexmoe/tinyshakespeare", "flexmoe_gshard_e8"):
        cfg = compose_cfg("paper=flexmoe", "dataset=tinyshakespeare", f"model={choice}", "tracker=none")
        runs = []
        for seed in (1, 2):
            routed = char_trace(rng, steps, kind)
            path = folder / "traces" / f"tinyshakespeare_{cfg.model.name}_s{seed}.npz"
            path.parent.mkdir(parents=True, exist_ok=True)
            np.savez_compressed(path, routed=routed, kept=routed.sum(2))
            per = [stats.summarise(routed.sum(2)[:, i], 10) for i in range(4)]
            metrics = {"valid_loss": 1.5 + 0.01 * seed, "valid_ppl": 4.5, "dropped_fraction": 0.0,
                       **{key: float(np.mean([p[key] for p in per])) for key in per[0]}}
            runs.append({"seed": seed, "metrics": metrics, "train": {"trace": path.name, "steps": steps}})
        record = {"dataset": "tinyshakespeare", "model": cfg.model.name, "complete": True, "runs": runs,
                  "config": OmegaConf.to_container(cfg, resolve=True), "wall_seconds": 60.0,
                  "environment": {"hardware": {"cpu": "test", "torch_threads": 1}}}
        (folder / "tinyshakespeare").mkdir(parents=True, exist_ok=True)
        (folder / "tinyshakespeare" / f"{cfg.model.name}.json").write_text(json.dumps(record))
        records["tinyshakespeare", cfg.model.name] = record
    return records


def premise(page) -> list[tuple[str, str]]:
    """(status, dataset) of the four premise claims, in page order."""
    return [(c.status, "ts" if c.dataset == "tinyshakespeare" else "wt2") for c in page.claims[2:6]]


def test_the_premise_is_judged_per_dataset_and_wikitext2_keeps_its_verdicts(tmp_path):
    folder = tmp_path / "flexmoe"
    wt2 = tiny_results(folder)  # a hot expert that moves every 10 steps: both premises supported
    alone = report.build(PaperResults("flexmoe", folder, wt2))
    assert premise(alone) == [("supported", "wt2"), ("not run", "ts"), ("supported", "wt2"), ("not run", "ts")]
    assert "make replicate-flexmoe dataset=tinyshakespeare" in alone.claims[3].evidence  # the command to run it

    ts = char_results(folder, "static_hot")  # imbalanced, but the same expert every step: no fluctuation
    page = report.build(PaperResults("flexmoe", folder, {**wt2, **ts}))
    assert premise(page) == [("supported", "wt2"), ("supported", "ts"), ("supported", "wt2"), ("contradicted", "ts")]
    for i in (0, 1, 2, 4, 6):  # WikiText-2's verdicts untouched by Tiny Shakespeare's records
        before, after = alone.claims[i], page.claims[i]
        assert (before.status, before.evidence, before.effect, before.interval) == \
               (after.status, after.evidence, after.effect, after.interval)
    imb, flu = page.claims[3], page.claims[5]
    # max/mean = 0.5 / (1/8) = 4 up to multinomial noise in both settings; interval = range over the two settings
    assert 3.5 < imb.interval[0] <= imb.interval[1] < 4.5 and imb.effect == imb.interval[0]
    assert flu.interval[1] < 1.2  # window-to-window change within the sampling-noise floor
    assert "Tiny Shakespeare" in imb.scale and "4-layer d128" in imb.scale and "200 steps of 12 x 64 characters" in imb.scale
    assert "WikiText-2, a 2-layer" in page.claims[2].scale and "tokens" in page.claims[2].scale
    assert "window: steps 101-200 of 200" in imb.evidence and "per setting: switch_e8" in flu.evidence
    assert [f.name for f in page.figures()] == ["premise.png", "premise_tinyshakespeare.png"]
    assert all(f.draw().get_axes() for f in page.figures())
    # the per-dataset premise verdicts are the Verdicts table's rows (premise() above); no second copy on the page
    assert not any(getattr(b, "header", [None])[0] == "dataset" for b in page.blocks)


@pytest.mark.filterwarnings("ignore:An input array is constant", "ignore:Mean of empty slice")
def test_balanced_char_traces_contradict_both_and_a_page_builds_from_them_alone(tmp_path):
    folder = tmp_path / "flexmoe"
    ts = char_results(folder, "balanced", steps=40)  # max/mean exactly 1, TV exactly 0
    page = report.build(PaperResults("flexmoe", folder, ts))
    assert premise(page) == [("not run", "wt2"), ("contradicted", "ts"), ("not run", "wt2"), ("contradicted", "ts")]
    assert page.claims[3].interval == (1.0, 1.0) and page.claims[5].interval == (0.0, 0.0)
    elsewhere = tmp_path / "moving" / "flexmoe"  # the verdicts read the traces beside the records
    moving = report.build(PaperResults("flexmoe", elsewhere, char_results(elsewhere, "moving_hot")))
    assert premise(moving)[1::2] == [("supported", "ts"), ("supported", "ts")]


def test_scale_counts_the_records_model_per_token():
    cfg = OmegaConf.to_container(compose_cfg("paper=flexmoe", "dataset=tinyshakespeare",
                                             "model=flexmoe/tinyshakespeare", "tracker=none"), resolve=True)
    total, per_token = measures.active_parameters(cfg)
    # per layer: attention 4 d^2 + 4 d, two LayerNorms 4 d, one 128 -> 512 -> 128 expert 2 d h + h + d; the router
    # 8 x 128; final LayerNorm 2 d. All: 8 experts.
    d, h = 128, 512
    layer = 4 * d * d + 4 * d + 4 * d + 2 * d * h + h + d
    assert 4 * layer + 2 * d <= per_token <= 4 * (layer + 8 * d + 8) + 2 * d
    assert total - per_token == 4 * 7 * (2 * d * h + h + d)


@pytest.mark.slow
@needs_mirror
def test_smoke_run_on_the_mirror_writes_validation_and_traces(tmp_path, fresh_cache):
    cfg = compose_cfg("paper=flexmoe", "dataset=tinyshakespeare", "model=flexmoe/tinyshakespeare", "scale=smoke",
                      "tracker=none", "scale.max_epochs=4", "paper.protocol.window=2", "model.ffn_hidden=64",
                      "paper.protocol.curve_points=2", "paper.protocol.curve_valid_tokens=1024",
                      "paper.protocol.smoke_eval_tokens=2048", f"paths.results_dir={tmp_path}")
    record = run(cfg, REPLICATION)
    assert record["complete"] and 1 < record["aggregate"]["valid_ppl"]["mean"] < 65
    routed = np.load(tmp_path / "flexmoe" / "traces" / "tinyshakespeare_switch_e8_s1.npz")["routed"]
    assert routed.shape == (4, 4, 12, 8) and (routed.sum((2, 3)) == 12 * 64).all()
