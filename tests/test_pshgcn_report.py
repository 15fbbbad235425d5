"""PSHGCN's page: the speed benchmark (side file) beside the protocol's epochs and wall time from the records."""

from __future__ import annotations

import json

from replications.pshgcn import REPLICATION, report
from shared.report import write_paper_pages
from shared.report.paper_hook import PaperResults


def record(dataset: str, model: str, epochs: list[int], wall: float) -> dict:
    return {"paper": "pshgcn", "dataset": dataset, "model": model, "scale": "full", "complete": True,
            "runs": [{"seed": s, "metrics": {"test_micro_f1": 90.0 + s, "test_macro_f1": 89.0 + s},
                      "train": {"epochs_run": e}} for s, e in enumerate(epochs, 1)],
            "wall_seconds": wall}


BENCH = {"epochs_timed": 10, "load_average_1min": {"before": 0.3, "after": 1.0},
         "environment": {"hardware": {"cpu": "AMD EPYC", "cpu_count": 2, "torch_threads": 1},
                         "versions": {"torch": "2.13.0+cpu"}, "git_commit": "b701b336f4abc", "git_dirty": False},
         "rows": [{"dataset": "dblp", "model": "pshgcn", "seconds_per_epoch": 0.6781, "peak_memory_mb": 1653.2},
                  {"dataset": "dblp", "model": "rgcn", "seconds_per_epoch": 0.339, "peak_memory_mb": 1239.0}]}


def test_page_from_records_and_benchmark(tmp_path):
    folder = tmp_path / "pshgcn" / "dblp"
    folder.mkdir(parents=True)
    (folder / "pshgcn.json").write_text(json.dumps(record("dblp", "pshgcn", [120, 130, 140, 120, 131], 720.0)))
    # an interrupted run: never read (rgcn has no complete record, so its protocol columns stay empty)
    (folder / "rgcn.partial.json").write_text(json.dumps({"complete": False, "runs": [], "config": {}}))
    (tmp_path / "pshgcn" / "benchmark.json").write_text(json.dumps(BENCH))
    assert write_paper_pages(tmp_path, {"pshgcn": REPLICATION.report}, plots=False) == ["pshgcn"]
    page = (tmp_path / "pshgcn" / "README.md").read_text()
    assert "| dblp | pshgcn | 0.678 | 1653 | 128 | 12.0 min |" in page
    assert "| dblp | rgcn | 0.339 | 1239 | — | — |" in page
    assert "AMD EPYC (2 cores, 1 torch threads), torch 2.13.0+cpu, commit b701b336f4;" in page
    assert "(5 seeds, early stopping)" in page
    data = json.loads((tmp_path / "pshgcn" / "claims.json").read_text())["data"]["benchmark"]
    assert data[0]["protocol_epochs_mean"] == 128.2 and data[1]["protocol_wall_seconds"] is None


def test_without_a_benchmark_the_page_opens_with_the_verdicts(tmp_path):
    records = {("dblp", "pshgcn"): record("dblp", "pshgcn", [100, 110], 1.0),
               ("dblp", "rgcn"): record("dblp", "rgcn", [100, 110], 1.0)}
    records["dblp", "rgcn"]["runs"][1]["metrics"]["test_micro_f1"] = 95.0  # pshgcn - rgcn: 0, -3
    page = report.build(PaperResults("pshgcn", tmp_path / "pshgcn", records))
    assert page.blocks[0] == report.TITLE and "benchmark" not in page.data
    verdicts = {(c.id, c.dataset): (c.status, c.effect) for c in page.claims}
    assert verdicts["micro_above_rgcn", "dblp"] == ("inconclusive", -1.5)  # hand: mean of 0 and -3
    assert verdicts["micro_above_rsage", "dblp"][0] == verdicts["micro_above_rgcn", "acm"][0] == "not run"
    assert report.build(PaperResults("pshgcn", tmp_path / "pshgcn", {})) is None
