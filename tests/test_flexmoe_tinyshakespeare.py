"""FlexMoE's traces on the character-level protocol (conf/dataset/tinyshakespeare.yaml): the narrowed plan composes
(nanoGPT's CPU run, one trace source per sequence, E = 8 at ~0.81M active parameters per token) while WikiText-2's
config stays as its records hold it; a tiny character run records every routed choice per source, repeats with the
seed, reads other windows with another seed, and evaluates validation only; one smoke run on the mirror."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from replications.flexmoe import REPLICATION, trace_path
from replications.flexmoe.charbench import active_parameters
from replications.flexmoe.train import fit
from replications.replicate import plan_configs
from shared.runner import run
from shared.seeding import seed_everything
from tests.conftest import CONF, compose_cfg, needs_mirror
from tests.runs import run_of

NARROWED = ["dataset=tinyshakespeare", "model=switch_e8,gshard_e8"]  # conf/paper/flexmoe.yaml's header command
TINY = ["paper=flexmoe", "dataset=tinyshakespeare", "tracker=none", "paper.protocol.steps=6",
        "paper.protocol.batch_size=6", "paper.protocol.seq_len=8", "paper.protocol.d_model=16", "paper.protocol.heads=2",
        "paper.protocol.layers=2", "paper.protocol.warmup_steps=2", "paper.protocol.curve_points=2",
        "paper.protocol.curve_valid_tokens=64", "paper.protocol.window=2", "model.ffn_hidden=32"]


@pytest.fixture(autouse=True)
def one_thread():
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
    assert [(d, m) for d, m, _ in configs] == [("tinyshakespeare", "switch_e8"), ("tinyshakespeare", "gshard_e8")]
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


def test_wikitext2_protocol_is_the_one_its_records_hold():
    assert compose_cfg("paper=flexmoe", "dataset=wikitext2", "tracker=none").paper.protocol.trace_sources == 16
    for record in sorted((CONF.parent / "results" / "flexmoe" / "wikitext2").glob("*.json")):
        saved = json.loads(record.read_text())
        if "config" not in saved or record.name.endswith(".partial.json"):
            continue
        choice = "flexmoe/wikitext2" if saved["model"] == "switch_e8" else f"flexmoe_{saved['model']}"
        cfg = OmegaConf.to_container(compose_cfg("paper=flexmoe", "dataset=wikitext2", f"model={choice}"), resolve=True)
        assert cfg["model"] == saved["config"]["model"], record.name
        assert cfg["paper"]["protocol"] == saved["config"]["paper"]["protocol"], record.name


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
