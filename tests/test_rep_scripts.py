"""REP's page from hand-made records (before/after/delta, cost section, claims); merging per-seed files (selection
on validation: tests/test_sweep.py); the paper file judges every referenced metric (a tolerance for each)."""

from __future__ import annotations

import json
import shutil

import pytest

from replications.rep import REPLICATION, report
from shared.paths import REPO_ROOT, RESULTS
from shared.reference import load_paper, recompare
from shared.report.paper_hook import PaperResults, Table, load_paper_results
from shared.verdict import STATUSES


def record(alpha: float, val: float, test: float, dataset: str = "wn18rr", model: str = "transe") -> dict:
    names = [f"{s}_{m}_{st}" for s in ("val", "test") for m in ("mrr", "mr", "hits1", "hits3", "hits10")
             for st in ("base", "rep")] + [f"test_{m}_delta" for m in ("mrr", "hits1", "hits3", "hits10")]
    agg = {n: {"mean": 0.1, "std": 0.0} for n in names}
    agg["val_mrr_rep"] = {"mean": val, "std": 0.0}
    agg["test_mrr_rep"] = {"mean": test, "std": 0.0}
    run = {"train": {"rep": {"alpha": alpha, "khop": 2, "neighbor_norm": False}, "train_seconds": 10.0,
                     "rep_seconds": 0.5}, "metrics": {"test_mrr_base": 0.2, "test_mrr_rep": test}}
    return {"complete": True, "scale": "full", "dataset": dataset, "model": model, "aggregate": agg,
            "runs": [run, run], "environment": {"hardware": {"cpu": "Test CPU"}}}


def test_page_from_records(tmp_path) -> None:
    records = {("wn18rr", "transe"): record(0.7, 0.3, 0.3), ("fb15k_237", "distmult"): record(0.99, 0.2, 0.2,
                                                                                                 "fb15k_237", "distmult")}
    page = report.build(PaperResults("rep", tmp_path / "rep", records))
    table = before_after_table(page)
    assert [r[:2] + r[3:4] for r in table.rows] == [["fb15k_237", "distmult", "0.99 / 2"], ["wn18rr", "transe", "0.7 / 2"]]
    assert table.rows[0][2].startswith("toy")  # no early stopping in the summary: not a converged base
    assert table.rows[1][-2:] == ["5.0%", "2"]  # REP/train = 0.5 / 10, two seeds
    assert page.blocks[0].startswith("# REP") and "CPU: Test CPU" in page.blocks[1]
    # no converged base and no ogbl-wikikg2 run: both claims not run; REP-OTE vs GC-OTE cannot be tested (no OTE here)
    assert [c.status for c in page.claims] == ["not run", "not run", "not testable here"]
    assert all(c.status in STATUSES and c.kind == "paper" and c.verified for c in page.claims)
    assert page.data["before_after"]["rows"] == table.rows
    assert not page.figures()  # no budget curves beside these records: no cost section
    assert report.build(PaperResults("rep", tmp_path / "rep", {})) is None


def wikikg2(claims: list) -> list:
    return [c for c in claims if c.id == "wikikg2_gain"]


def test_wikikg2_claim_judged_by_the_sign_of_every_run(tmp_path) -> None:
    gain = record(0.9, 0.3, 0.22, "ogbl_wikikg2", "transe")  # 0.2 -> 0.22: +10%
    claims = wikikg2(report.build(PaperResults("rep", tmp_path, {("ogbl_wikikg2", "transe"): gain})).claims)
    assert claims[0].status == "supported" and claims[0].effect == pytest.approx(10.0)
    assert claims[0].interval == pytest.approx((10.0, 10.0))
    loss = record(0.9, 0.3, 0.18, "ogbl_wikikg2", "rotate")
    claims = wikikg2(report.build(PaperResults("rep", tmp_path, {("ogbl_wikikg2", "transe"): gain,
                                                                 ("ogbl_wikikg2", "rotate"): loss})).claims)
    assert claims[0].status == "inconclusive"


def test_cost_section_from_side_files(tmp_path) -> None:
    folder = tmp_path / "rep"
    (folder / "budget").mkdir(parents=True)
    for name in ("bench_steps.json", "bench_eval.json", "budget/wn18rr_complex.json"):
        shutil.copy(RESULTS / "rep" / name, folder / name)
    (folder / "budget" / "x.partial.json").write_text("{not json")  # never read
    page = report.build(PaperResults("rep", folder, {("wn18rr", "transe"): record(0.7, 0.3, 0.3)}))
    tables = [b for b in page.blocks if isinstance(b, Table)]
    assert len(tables) == 4 and tables[1].rows[0][:3] == ["wn18rr", "complex", 200]
    assert tables[1].rows[0][-1].startswith("extrapolated")
    assert [f.name for f in page.figures()] == ["budget/budget.png"]
    assert {r["model"] for r in page.data["bench_eval"]} == {"transe", "distmult", "complex"}
    assert page.data["budget"][0]["last_point"]["test_mrr"] == pytest.approx(0.3665, abs=1e-4)


def before_after_table(page) -> Table:
    return next(b for b in page.blocks if isinstance(b, Table) and "base embeddings" in b.header)


def test_committed_records_build_a_page_and_every_reference_has_a_tolerance(tmp_path) -> None:
    paper = load_paper(REPLICATION.paper_file)
    results = load_paper_results(RESULTS, "rep")
    assert len(results.records) == 8
    for rec in results.records.values():
        rows = {r["metric"]: r for r in recompare(rec, paper)}  # raises ToleranceError on a missing tolerance
        assert rows["test_mr_base"]["tolerance"] == 10
        if not report.converged(rec):  # the toy bases are far below every converged reference
            assert rows["test_mrr_base"]["status"] == "not reproduced"
    page = report.build(results)
    assert len(before_after_table(page).rows) == 8
    from shared.report import write_paper_pages

    shutil.copytree(RESULTS / "rep", tmp_path / "rep")
    assert write_paper_pages(tmp_path, {"rep": REPLICATION.report}, plots=False) == ["rep"]
    written = json.loads((tmp_path / "rep" / "claims.json").read_text())
    # the converged ComplEx on FB15k-237 is judged (its status depends on the record), the rest as before
    statuses = [c["status"] for c in written["claims"]]
    assert statuses[0] in STATUSES and statuses[0] != "not run" and statuses[1:] == ["not run", "not testable here"]


def test_merge_joins_single_seed_files_and_skips_partial_ones(tmp_path) -> None:
    from shared import merge

    def single(seed: int, mrr: float) -> dict:
        r = record(0.7, 0.3, 0.3)
        r["runs"] = [{"seed": seed, "metrics": {"test_mrr_base": mrr}, "train": {}, "wall_seconds": 1.0}]
        r |= {"paper": "rep", "wall_seconds": 2.0, "data_seconds": 1.0, "peak_memory_mb": 5.0,
              "environment": {}, "config": {"paper": {"protocol": {"seeds": [1, 2, 3]}}, "seed": seed}}
        return r

    for seed, mrr in ((2, 0.4), (1, 0.2)):
        path = tmp_path / f"s{seed}" / "rep" / "wn18rr" / "transe.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(single(seed, mrr)))
    # a partial file (even one claiming completeness) is never read: seed 3 stays missing
    (tmp_path / "s2" / "rep" / "wn18rr" / "transe.partial.json").write_text(json.dumps(single(3, 0.9)))
    assert merge.main(["--roots", str(tmp_path / "out"), str(tmp_path / "s1"), str(tmp_path / "s2")]) == 0
    out = json.loads((tmp_path / "out" / "rep" / "wn18rr" / "transe.json").read_text())
    assert [r["seed"] for r in out["runs"]] == [1, 2] and out["missing_seeds"] == [3] and not out["complete"]
    assert abs(out["aggregate"]["test_mrr_base"]["mean"] - 0.3) < 1e-12 and out["aggregate"]["test_mrr_base"]["n"] == 2
    row = next(c for c in out["comparison"] if c["metric"] == "test_mrr_base")
    assert row["reported"] == 0.2234  # the higher test_mrr_base reference (SE-GNN ranks over Graph4KG 0.189)


def test_no_results_root_is_computed_in_the_package() -> None:
    for path in (REPO_ROOT / "replications" / "rep").glob("*.py"):
        text = path.read_text()
        assert "parents[" not in text and "PROJECT_ROOT" not in text and "result_path" not in text, path.name


def test_gpu_and_full_recipe_scripts_parse() -> None:
    import subprocess

    for script in ("replications/rep/full.sh", "replications/rep/converged.sh", "replications/rep/gpu/check.sh",
                   "replications/rep/gpu/stage.sh"):
        subprocess.run(["bash", "-n", str(REPO_ROOT / script)], check=True)
