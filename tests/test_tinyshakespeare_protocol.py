"""The character-level protocol (conf/dataset/tinyshakespeare.yaml on the shared MoE LM): its configs compose for
every arm without a WikiText-2 value leaking in (and WikiText-2's stay as its records hold them), nanoGPT's schedule,
weight-decay groups, random windows and tied head by hand, a tiny model learns a planted signal in seconds, and one
smoke run on the mirror against its golden values."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
import yaml
from omegaconf import OmegaConf

from replications.evomoe import REPLICATION
from replications.evomoe.train import fit
from replications.moe.lmtrain import cosine_lr_at, mean_nll, param_groups, random_batch
from shared.data.tinyshakespeare import split
from shared.runner import run
from shared.seeding import seed_everything
from tests.conftest import CONF, compose_cfg, needs_mirror
from tests.golden import check_golden
from tests.runs import run_of

ROOT = CONF.parent
ARMS = ["evomoe/tinyshakespeare", "evomoe_dense", "evomoe_switch", "evomoe_gshard", "evomoe_hash", "evomoe_base"]
TINY = ["paper=evomoe", "dataset=tinyshakespeare", "tracker=none", "paper.protocol.steps=40",
        "paper.protocol.batch_size=8", "paper.protocol.seq_len=16", "paper.protocol.d_model=32", "paper.protocol.heads=2",
        "paper.protocol.layers=1", "paper.protocol.warmup_steps=5", "paper.protocol.lr=1e-2",
        "paper.protocol.curve_points=4", "paper.protocol.curve_valid_tokens=256", "model.ffn_hidden=64"]


def char_protocol() -> dict:
    return yaml.safe_load((CONF / "dataset" / "tinyshakespeare.yaml").read_text())["paper"]["protocol"]


@pytest.mark.parametrize("arm", ARMS)
def test_every_arm_composes_with_the_char_protocol_and_nothing_of_wikitext2(arm):
    cfg = compose_cfg("paper=evomoe", "dataset=tinyshakespeare", f"model={arm}", "tracker=none")
    assert OmegaConf.to_container(cfg.paper.protocol) == char_protocol()  # every key from the dataset's block
    assert cfg.dataset.name == "tinyshakespeare" and cfg.paper.protocol.steps == 2000
    ffn = cfg.model.ffn_hidden * (2 if cfg.model.gate == "gshard" else 1)
    assert ffn == 4 * cfg.paper.protocol.d_model  # equal active FFN width: one 512 expert, or GShard's two of 256


def test_wikitext2_configs_are_the_ones_their_records_hold():
    for record in sorted((ROOT / "results" / "evomoe" / "wikitext2").glob("*.json")):
        saved = json.loads(record.read_text())
        if "config" not in saved or record.name.endswith(".partial.json"):
            continue
        choice = "evomoe/wikitext2" if saved["model"] == "evomoe" else f"evomoe_{saved['model']}"
        cfg = OmegaConf.to_container(compose_cfg("paper=evomoe", "dataset=wikitext2", f"model={choice}"), resolve=True)
        for part in ("dataset", "model"):
            assert cfg[part] == saved["config"][part], (record.name, part)
        protocol = dict(saved["config"]["paper"]["protocol"])
        moved = protocol.pop("threads", None)  # records before conf/config.yaml's `threads` kept the count here
        assert cfg["paper"]["protocol"] == protocol and cfg["threads"] == saved["config"].get("threads", moved), record.name


def test_cosine_schedule_by_hand():
    # nanoGPT get_lr: warm-up lr * (it+1) / (warmup+1), then a half cosine from lr to min_lr at the last step
    assert cosine_lr_at(0, 2000, 100, 1e-3, 1e-4) == pytest.approx(1e-3 / 101)
    assert cosine_lr_at(99, 2000, 100, 1e-3, 1e-4) == pytest.approx(1e-3 * 100 / 101)
    assert cosine_lr_at(100, 2000, 100, 1e-3, 1e-4) == pytest.approx(1e-3)
    assert cosine_lr_at(1050, 2000, 100, 1e-3, 1e-4) == pytest.approx(5.5e-4)  # halfway: the mean of the two
    assert cosine_lr_at(2000, 2000, 100, 1e-3, 1e-4) == pytest.approx(1e-4)


def test_weight_decay_on_matrices_only():
    corpus = split("abcdefgh" * 100)
    for arm, decayed in (("evomoe_dense", 10), ("evomoe_switch", 10)):  # embed, pos, 2 x (qkv, out, fc1 / w1, fc2 / w2)
        model = REPLICATION.build_model(run_of(compose_cfg(*TINY, "paper.protocol.layers=2", f"model={arm}")), corpus)
        yes, no = param_groups(model, 0.1, "matrices")
        shapes = sorted(tuple(p.shape) for p in yes["params"])
        assert yes["weight_decay"] == 0.1 and no["weight_decay"] == 0.0
        assert all(p.dim() == 1 or (p.dim() == 2 and p.shape[0] == 4) for p in no["params"])  # biases, gains
        assert (8, 32) in shapes and (16, 32) in shapes  # the embeddings (token, tied to the head; position)
        if arm == "evomoe_dense":
            assert len(shapes) == decayed
        else:  # per layer also the gate's projection [4, 32]; the stacked expert matrices w1, w2 decay, b1, b2 not
            assert len(shapes) == decayed + 2 and (4, 32, 64) in shapes and (4, 64, 32) in shapes and (4, 32) in shapes
        assert len(yes["params"]) + len(no["params"]) == len(list(model.parameters()))


def test_random_windows_are_shifted_targets_and_a_function_of_the_seed():
    data = torch.arange(100)
    x, y = random_batch(data, 5, 8, torch.Generator().manual_seed(3))
    assert x.shape == (5, 8) and torch.equal(y, x + 1) and int(x.max()) < 99
    x2, _ = random_batch(data, 5, 8, torch.Generator().manual_seed(3))
    x3, _ = random_batch(data, 5, 8, torch.Generator().manual_seed(4))
    assert torch.equal(x, x2) and not torch.equal(x, x3)


def test_tied_head_and_gpt2_init_start_at_a_uniform_guess():
    corpus = split("abcdefgh" * 100)
    cfg = compose_cfg(*TINY, "model=evomoe_dense")
    seed_everything(1)
    model = REPLICATION.build_model(run_of(cfg), corpus)
    assert model.head is None  # the softmax matrix is the embedding: no head parameters of its own
    first = mean_nll(model, corpus.valid, 16)
    assert abs(first - math.log(8)) < 0.25  # small logits: ~ln(V) before training
    untied = REPLICATION.build_model(run_of(compose_cfg(*TINY, "model=evomoe_dense", "paper.protocol.init_std=null")),
                                     corpus)
    assert mean_nll(untied, corpus.valid, 16) > 5  # the default N(0, 1) embedding as a head: far from uniform


@pytest.mark.parametrize("arm", ["evomoe_dense", "evomoe/tinyshakespeare"])
def test_a_tiny_char_model_learns_a_planted_signal_in_seconds(arm):
    corpus = split("abcdefgh" * 500)  # each character fixes the next: ln(8) = 2.08 nats for a model that learns nothing
    cfg = compose_cfg(*TINY, f"model={arm}")
    seed_everything(1)
    model = REPLICATION.build_model(run_of(cfg), corpus)
    summary = fit(cfg, model, corpus.train, corpus.valid, 1, lambda m, s: None)
    assert summary["train_tokens"] == 40 * 8 * 16
    assert mean_nll(model, corpus.valid, 16) < 0.1


def test_evaluate_reports_validation_loss_and_no_test():
    corpus = split("abcdefgh" * 100)
    spec = run_of(compose_cfg(*TINY, "model=evomoe_switch", "paper.protocol.steps=3"))
    model = REPLICATION.build_model(spec, corpus)
    summary = REPLICATION.train(spec, model, corpus, 1, lambda m, s: None)
    metrics = REPLICATION.evaluate(spec, model, corpus, 1, summary)
    assert set(metrics) == {"valid_loss", "valid_ppl", "train_tokens_per_s", "mean_active_experts"}
    assert metrics["valid_ppl"] == pytest.approx(math.exp(metrics["valid_loss"]))


@pytest.mark.slow
@needs_mirror
def test_smoke_run_on_the_mirror_matches_its_golden_values(tmp_path: Path, fresh_cache):
    cfg = compose_cfg("paper=evomoe", "dataset=tinyshakespeare", "model=evomoe/tinyshakespeare", "scale=smoke",
                      "tracker=none", "scale.max_epochs=10", f"paths.results_dir={tmp_path}")
    from shared.smoke import apply_smoke

    apply_smoke(cfg)
    record = run(cfg, REPLICATION)
    assert record["complete"] and record["config"]["paper"]["protocol"]["steps"] == 2000  # capped to 10 by the scale
    agg = record["aggregate"]
    assert agg["valid_loss"]["mean"] < math.log(65)  # 10 steps already beat a uniform guess over 65 characters
    check_golden("evomoe", f"{record['dataset']}/{record['model']}",
                 {m: a["mean"] for m, a in agg.items() if m != "train_tokens_per_s"})  # a timing, not golden


def test_make_replicate_narrowed_to_the_dataset_plans_every_arm():
    from replications.replicate import plan_configs

    plan = plan_configs("evomoe", ["dataset=tinyshakespeare"])
    assert [(d, c.model.name) for d, _, c in plan] == [("tinyshakespeare", m) for m in
                                                     ("evomoe", "dense", "switch", "gshard", "hash", "base")]
    assert all(c.paper.protocol.batches == "random" and c.paper.protocol.seeds == [1, 2, 3] for _, _, c in plan)
    smoke = plan_configs("evomoe", ["dataset=tinyshakespeare", "scale=smoke"])
    assert all(c.scale.max_epochs == 10 and c.model.ffn_hidden == 64 for _, _, c in smoke)  # the paper's smoke block
