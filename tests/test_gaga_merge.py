"""Merging one-seed runner records gives the runner's own aggregate; bad merges are refused; the page is built
from complete records only."""

from __future__ import annotations

import json

import pytest

from replications.gaga import REPLICATION, report
from shared.merge import job_records, merge_records, merge_roots
from shared.paths import REPO_ROOT
from shared.report import write_paper_pages
from shared.report.paper_hook import PaperResults
from shared.stats import aggregate


def record(seed: int, auc: float, model: str = "gaga") -> dict:
    return {"paper": "gaga", "dataset": "tolokers", "model": model, "scale": "full", "complete": True,
            "runs": [{"seed": seed, "metrics": {"test_auc": auc}, "train": {"epochs_run": 5}, "wall_seconds": 1.0}],
            "wall_seconds": 2.0, "data_seconds": 0.5, "peak_memory_mb": 10.0 + seed,
            "environment": {"hardware": {}}, "config": {"seed": seed, "paper": {"protocol": {"seeds": [0, 1, 2]}}}}


def merge(records: list[dict]) -> dict:
    """The one merge front-end (shared.merge) as --roots calls it for GAGA: planned seeds from the config."""
    from shared.merge import planned_seeds

    if not records:
        return merge_records([], REPLICATION.paper_file)
    return merge_records(records, REPLICATION.paper_file, planned=planned_seeds(records[0]))


def test_merge_matches_aggregate_and_orders_seeds():
    out = merge([record(2, 80.0), record(0, 70.0), record(1, 75.0)])
    assert [r["seed"] for r in out["runs"]] == [0, 1, 2]
    assert out["aggregate"] == aggregate([{"test_auc": 70.0}, {"test_auc": 75.0}, {"test_auc": 80.0}])
    assert out["wall_seconds"] == 6.0 and out["peak_memory_mb"] == 12.0 and out["config"]["seed"] is None
    # GAGA's one Tolokers reference is the official code's run (results/gaga/tolokers/official.json), when committed
    official = REPO_ROOT / "results" / "gaga" / "tolokers" / "official.json"
    assert out["comparison"][0]["reference_kind"] == ("authors_code_run" if official.exists() else None)
    assert out["complete"] and out["missing_seeds"] == []


def test_partial_merge_is_not_complete():
    out = merge([record(0, 70.0), record(2, 80.0)])
    assert not out["complete"] and out["missing_seeds"] == [1]


def test_merge_refuses_duplicates_and_mixtures():
    with pytest.raises(ValueError, match="duplicate seeds"):
        merge([record(0, 70.0), record(0, 71.0)])
    with pytest.raises(ValueError, match="disagree"):
        merge([record(0, 70.0), record(1, 71.0, model="mlp")])
    with pytest.raises(ValueError, match="nothing"):
        merge([])


def test_partial_records_are_never_merged(tmp_path):
    partial = {"complete": False, "runs": [], "config": {"seed": 3}}  # what an interrupted job leaves
    with pytest.raises(ValueError, match="nothing to merge"):
        merge([partial])
    for seed, name in ((0, "gaga.json"), (1, "gaga.json"), (2, "gaga.partial.json")):
        path = tmp_path / str(seed) / "gaga" / "tolokers" / name
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(record(seed, 70.0 + seed)))
    roots = sorted(tmp_path.iterdir())
    found = job_records(roots)
    assert [p.parent.parent.parent.name for p, _ in found["gaga", "tolokers", "gaga"]] == ["0", "1"]
    merged = merge_roots(roots)["gaga", "tolokers", "gaga"]
    assert [r["seed"] for r in merged["runs"]] == [0, 1] and merged["missing_seeds"] == [2] and not merged["complete"]


def protocol_record(model: str, aucs: list[float], **dataset_cfg) -> dict:
    """A complete full-scale record as the runner writes it (the fields the page reads)."""
    runs = [{"seed": s, "metrics": {"test_auc": a, "test_ap": a / 2, "test_f1_macro": a - 10},
             "train": {"epochs_run": 100 + s, "best_epoch": 480 if s == 0 else 10, "max_epochs": 500}}
            for s, a in enumerate(aucs)]
    return {"paper": "gaga", "dataset": "tolokers", "model": model, "scale": "full", "complete": True, "runs": runs,
            "aggregate": aggregate([r["metrics"] for r in runs]), "wall_seconds": 120.0,
            "config": {"paper": {"protocol": {"patience": 100, "max_epochs": 500, "step_batch": 256}},
                       "dataset": {"name": "tolokers", **dataset_cfg}, "model": {"name": model}}}


def test_page_from_records_and_benchmark(tmp_path):
    folder = tmp_path / "gaga" / "tolokers"
    folder.mkdir(parents=True)
    for model, aucs in (("mlp", [70.0, 72.0]), ("graphsage", [80.0, 84.0]), ("gaga", [78.0, 80.0])):
        (folder / f"{model}.json").write_text(json.dumps(protocol_record(model, aucs)))
    # an interrupted run beside them: never read (it would replace gaga's row, and has no 'model' key)
    (folder / "gaga.partial.json").write_text(json.dumps({"complete": False, "runs": [], "config": {}}))
    bench = {"relations": [{"relation": "net_rur", "stored_edges": 98624, "two_hop_pairs": 356360, "seconds": 0.5,
                            "cpu_seconds": 0.6}], "nodes": 45954, "features": 32, "workers": 2, "block": 512,
             "target_seconds": 120, "peak_rss_mb": 10.0, "load_average_at_end": [1.0], "cpus": 2,
             "total_seconds": 2.0, "total_cpu_seconds": 2.5}
    (tmp_path / "gaga" / "benchmark.json").write_text(json.dumps(bench))
    assert write_paper_pages(tmp_path, {"gaga": REPLICATION.report}, plots=False) == ["gaga"]
    page = (tmp_path / "gaga" / "README.md").read_text()
    rows = [line for line in page.splitlines() if line.startswith("| ") and "±" in line]
    assert [r.split(" | ")[0] for r in rows] == ["| gaga", "| mlp", "| graphsage"]  # paper order
    assert rows[0].split(" | ")[1:3] == ["79.00 ± 1.41", "39.50 ± 0.71"]  # sample std (ddof=1)
    assert "| 1/2 | 100 epochs of batches of 256, in steps | row-normalised | – | 2.0 |" in rows[0]
    assert "82.43 ± 0.44 (authors_release)" in rows[2]
    assert "| net_rur | 98,624 | 356,360 | 0.5 | 0.6 |" in page and "this run meets it in wall time" in page
    claims = json.loads((tmp_path / "gaga" / "claims.json").read_text())
    assert {c["id"]: c["status"] for c in claims["claims"]} == {  # GAGA - MLP: +8, +8; - GraphSAGE: -2, -4 (2 splits)
        "beats_graphsage": "inconclusive", "beats_mlp": "supported", "beats_bwgnn": "not run",
        "matches_official_auc": "not run", "matches_official_f1": "not run"}
    assert claims["data"]["benchmark"]["nodes"] == 45954
    assert [r["model"] for r in claims["data"]["datasets"]["tolokers"]] == ["gaga", "mlp", "graphsage"]


def test_no_page_without_records_or_benchmark(tmp_path):
    assert report.build(PaperResults("gaga", tmp_path / "gaga", {})) is None


def test_roots_front_end_says_when_nothing_is_found(tmp_path, capsys):
    from shared.merge import main

    (tmp_path / "empty").mkdir()
    assert main(["--roots", str(tmp_path / "out"), str(tmp_path / "empty")]) == 2
    assert "no complete result record" in capsys.readouterr().err and not (tmp_path / "out").exists()
