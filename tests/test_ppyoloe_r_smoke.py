"""The real command at scale=smoke (every model through the runner, then the paper's page), the methods called
with a Run, and the page built from hand-made records."""

from __future__ import annotations

import json

import pytest
from omegaconf import OmegaConf

from replications import replicate
from replications.ppyoloe_r import REPLICATION, architecture, report
from shared.report.paper_hook import Figure, PaperResults, Table
from shared.verdict import CLAIM_STATUSES
from tests.golden import check_golden
from tests.runs import run_of

# Golden smoke values (tests/golden/ppyoloe_r.json): every metric (mAP, per-class AP) plus the final training
# losses; none is a timing (train_seconds stays in the summary), so nothing is left out. Two runs were bit-identical.
LEFT_OUT: set[str] = set()


@pytest.mark.slow
def test_replicate_smoke_writes_results_and_pages(monkeypatch, tmp_path):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.chdir(tmp_path)  # the kept weights go under ./outputs
    out = tmp_path / "ppyoloe_r"
    assert architecture.main([str(out), "--sizes", "s"]) == 0  # the side file the page reads
    code = replicate.main(["ppyoloe_r", "scale=smoke", "tracker=none", f"paths.results_dir={tmp_path}"])
    assert code == 0
    for model in ("ppyoloe_r", "ppyoloe_r_smoothl1", "ppyoloe_r_direct_angle"):
        saved = json.loads((out / "synthetic_rotated" / f"{model}.json").read_text())
        assert saved["complete"] and 0.0 <= saved["aggregate"]["test_map"]["mean"] <= 100.0
        means = {m: a["mean"] for m, a in saved["aggregate"].items() if m not in LEFT_OUT}
        # two smoke steps score mAP 0: the final training losses carry the signal a change would move
        means |= {f"train_final_{k}": v for k, v in saved["runs"][0]["train"]["final_losses"].items()}
        check_golden("ppyoloe_r", f"{saved['dataset']}/{saved['model']}", means)
    curve = json.loads((out / "synthetic_rotated" / "ppyoloe_r.json").read_text())["runs"][0]["train"]["curve"]
    assert [c["step"] for c in curve] == [1, 2]
    page = (out / "README.md").read_text()
    assert "| ppyoloe_r_s |" in page and "| yes |" in page and "`ppyoloe_r_smoothl1`" in page
    claims = json.loads((out / "claims.json").read_text())["claims"]
    assert len(claims) == 2 and all(c["status"] in CLAIM_STATUSES for c in claims)
    assert (out / "learning_curve.png").exists() and not (out / "dota_examples.png").exists()  # smoke: no DOTA figure
    assert (tmp_path / "outputs" / "ppyoloe_r" / "weights" / "synthetic_rotated_smoke_seed1.pt").exists()


def test_unknown_dataset_is_refused():
    with pytest.raises(ValueError, match="valid: synthetic_rotated, dota_v1"):
        REPLICATION.load_data(run_of({"dataset": {"name": "dior"}}))


def _tiny_cfg(model: str = "ppyoloe_r"):
    return OmegaConf.create({
        "paper": {"name": "ppyoloe_r", "protocol": {"curve_model": "ppyoloe_r", "curve_seed": 1, "curve_every": 1}},
        "dataset": {"name": "synthetic_rotated", "image_size": 64, "n_train": 4, "n_val": 2, "n_test": 2,
                    "objects": [1, 2], "scale": [0.2, 0.4], "pre_nms": 50, "seeds": {"train": 0, "val": 1, "test": 2}},
        "model": {"name": model, "size": "s", "angle": "dfl", "box": "probiou", "steps": 1, "batch_size": 2,
                  "lr": 1e-3, "weight_decay": 0.0, "warmup": 1},
        "scale": {"name": "smoke"}, "device": "cpu"})


def test_methods_take_a_run_and_keep_no_state(monkeypatch, tmp_path):
    """load_data -> build_model -> train -> evaluate(summary) on 4 tiny images: the curve run keeps its weights
    under ./outputs, another seed does not, and the module-level object gains no attribute."""
    import torch

    monkeypatch.chdir(tmp_path)
    before = dict(vars(REPLICATION))
    run = run_of(_tiny_cfg(), seeds=(1, 2))
    data = REPLICATION.load_data(run)
    assert [len(data[k]) for k in ("train", "val", "test")] == [4, 2, 2]
    for seed in (1, 2):
        torch.manual_seed(seed)
        model = REPLICATION.build_model(run, data)
        summary = REPLICATION.train(run, model, data, seed, lambda *a: None)
        metrics = REPLICATION.evaluate(run, model, data, seed, summary)
        assert 0.0 <= metrics["test_map"] <= 100.0 and all(k.startswith("test_") for k in metrics)
        assert (len(summary["curve"]) == 1) == (seed == 1)
    weights = sorted(p.name for p in (tmp_path / "outputs" / "ppyoloe_r" / "weights").iterdir())
    assert weights == ["synthetic_rotated_smoke_seed1.pt"]
    assert dict(vars(REPLICATION)) == before


def _record(model, maps, curve=()):
    runs = [{"seed": s, "metrics": {"test_map": v}, "wall_seconds": 10.0,
             "train": {"train_seconds": 8.0, "curve": list(curve) if s == 1 else []}}
            for s, v in zip((1, 2, 3), maps)]
    cfg = {"dataset": {"n_train": 8, "image_size": 64, "n_test": 4, "n_val": 2},
           "model": {"size": "s", "angle": "dfl", "steps": 4, "batch_size": 2},
           "paper": {"protocol": {"curve_seed": 1}}}
    return {"paper": "ppyoloe_r", "dataset": "synthetic_rotated", "model": model, "scale": "smoke", "complete": True,
            "runs": runs, "config": cfg, "wall_seconds": 30.0}


def _results(tmp_path, maps: dict[str, list[float]]) -> PaperResults:
    curve = [{"step": 2, "map": 50.0, "seconds": 1.0}, {"step": 4, "map": 70.0, "seconds": 2.0}]
    records = {("synthetic_rotated", m): _record(m, v, curve if m == "ppyoloe_r" else ()) for m, v in maps.items()}
    return PaperResults("ppyoloe_r", tmp_path / "ppyoloe_r", records)


def test_page_from_records_reads_paired_differences(tmp_path):
    page = report.build(_results(tmp_path, {
        "ppyoloe_r": [70.0, 72.0, 71.0],
        "ppyoloe_r_smoothl1": [60.0, 62.5, 60.5],  # 10.0, 9.5, 10.5 lower: supported
        "ppyoloe_r_direct_angle": [71.0, 71.0, 72.0]}))  # +1, -1, +1: the interval holds 0
    smooth, direct = page.claims
    assert (smooth.status, direct.status) == ("supported", "inconclusive")
    assert smooth.effect == pytest.approx(-10.0) and smooth.interval[1] < 0 < direct.interval[1]
    assert direct.kind == "authors_release" and direct.verified and smooth.kind == "paper" and not smooth.verified
    assert direct.evidence.startswith("+0.333 [-2.54, +3.2] mAP (95% t, n = 3)") and "+0.23 mAP" in direct.caveat
    assert smooth.scale.startswith("s model from scratch, 4 steps") and smooth.reached_scale["params"] == 8_024_900
    assert smooth.claim_scale["params"] == 8.09e6 and direct.scale_ratio == pytest.approx(8_024_900 / 53.29e6)
    table = next(b for b in page.blocks if isinstance(b, Table))
    assert table.rows[0][1:4] == ["71.00 ± 1.00", 3, "70.00, 72.00, 71.00"]
    assert table.rows[1][4].startswith("-10.00 [")
    text = "\n".join(b for b in page.blocks if isinstance(b, str))
    assert "Noise floor: the paper's setting varies by 1.00 mAP" in text and "2: 50.0, 4: 70.0" in text
    assert "DFL-angle gain (+0.23 mAP on DOTA, README appendix) is below this run's resolution (± 2.87)" in text
    assert [f.name for f in page.figures()] == ["learning_curve.png"]
    assert "No architecture.json beside these results" in text and page.data["architecture"] is None
    assert page.data["ablation"]["ppyoloe_r_smoothl1"]["paired_diff"]["n"] == 3


def test_page_without_an_alternative_says_not_run_and_reads_the_architecture_file(tmp_path):
    results = _results(tmp_path, {"ppyoloe_r": [70.0, 72.0, 71.0], "ppyoloe_r_smoothl1": [71.0, 73.0, 71.5]})
    results.folder.mkdir(parents=True)
    (results.folder / "architecture.json").write_text(json.dumps(
        {"rows": architecture.rows(("s",)), "seconds": 0.5,
         "environment": {"git_commit": "abcdef0123456789", "git_dirty": True, "versions": {"torch": "9.9"}}}))
    (results.folder / "dota_examples.png").write_bytes(b"")  # a committed figure is kept, not redrawn
    page = report.build(results)
    assert [c.status for c in page.claims] == ["contradicted", "not run"]  # +1, +1, +0.5 higher: contradicted
    arch = [b for b in page.blocks if isinstance(b, Table)][-1]
    assert arch.rows[0][:5] == ["ppyoloe_r_s", "8.24", "8.0854", 8.09, "yes"] and "abcdef0123 (dirty tree)" in arch.note
    assert "![dota_examples](dota_examples.png)" in page.blocks
    assert not any(isinstance(b, Figure) and b.name == "dota_examples.png" for b in page.blocks)
    assert report.build(PaperResults("ppyoloe_r", tmp_path / "none", {})) is None


def test_dota_figure_is_redrawn_only_from_full_scale_weights(monkeypatch, tmp_path):
    """With the curve run's weights under ./outputs at full scale (and the example images in the mirror) the
    page draws the figure; a smoke run's weights do not; without weights a committed figure is linked as it is."""
    from replications.ppyoloe_r import dota_data
    from replications.ppyoloe_r.train import weights_path

    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "results" / "ppyoloe_r"
    assert report.dota_block(folder, "full", 1) is None
    for scale in ("full", "smoke"):
        weights_path("synthetic_rotated", scale, 1).parent.mkdir(parents=True, exist_ok=True)
        weights_path("synthetic_rotated", scale, 1).write_bytes(b"")
    assert report.dota_block(folder, "smoke", 1) is None
    monkeypatch.setattr(dota_data, "example_images", lambda: {"P0000": tmp_path / "P0000.png"})
    monkeypatch.setattr(dota_data, "example_labels", lambda: {})
    block = report.dota_block(folder, "full", 1)
    assert isinstance(block, Figure) and block.name == "dota_examples.png"

    def missing():
        raise report.DataError("no DOTA examples in the mirror")

    monkeypatch.setattr(dota_data, "example_images", missing)
    folder.mkdir(parents=True)
    (folder / "dota_examples.png").write_bytes(b"")
    assert report.dota_block(folder, "full", 1) == "![dota_examples](dota_examples.png)"
