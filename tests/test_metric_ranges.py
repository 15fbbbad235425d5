"""A stored metric outside the range its name implies is an error naming the file: when the runner stores a
record, and when the report reads one. Every committed record is within range."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shared.metric_ranges import MetricRangeError, check_record, is_timing, out_of_range, range_of
from shared.paths import REPO_ROOT
from shared.report.content import scan
from shared.runner import run
from tests.test_runner import Toy, _cfg, paper_file  # noqa: F401  (fixture)


def test_impossible_values_are_named():
    assert out_of_range({"test_micro_f1": 150.0, "test_auc": 1.3, "test_ppl": -2.0, "test_mrr": 1.3,
                         "val_hits10_rep": -0.1, "test_mr_base": 0.5}) == [
        "test_micro_f1 = 150.0 is outside [0, 100] (a percent-scale score)",
        "test_ppl = -2.0 is outside [1, inf] (a perplexity (exp of a cross-entropy, >= 1))",
        "test_mrr = 1.3 is outside [0, 1] (a fraction (MRR, Hits@k))",
        "val_hits10_rep = -0.1 is outside [0, 1] (a fraction (MRR, Hits@k))",
        "test_mr_base = 0.5 is outside [1, inf] (a mean rank (ranks start at 1))",
    ]  # an AUC of 1.3 is a possible percent (this suite's AUCs are percent: gaga's paper.yaml)


def test_possible_values_pass():
    fine = {"test_micro_f1": 95.8, "test_ap_plane": 100.00000000000003,  # rounding at the bound
            "test_mrr_delta": -0.003, "test_cer": 120.0, "test_ppl": 568.2, "test_f1": float("nan"),
            "latency_ms_median": 71.5, "params_m": 26.0, "test_hits1_rep": 0.29, "test_auc": 0.83}
    assert out_of_range(fine) == []
    assert out_of_range({"cpu_latency_ms_mean": -1.0}) and out_of_range({"test_acc": 100.001})
    assert range_of("imbalance_mean") is None  # no rule: unchecked


def test_timings_by_name():
    timings = ["a2a_ms_r100_4KiB", "latency_ms_median", "train_tokens_per_s", "wall_seconds", "test_read_gb_per_s",
               "test_ring_k2_speedup_vs_load_then_compute", "ring_k2_faster_in_every_repeat", "throughput"]
    assert all(is_timing(n) for n in timings)
    assert not any(is_timing(n) for n in ["test_micro_f1", "test_mrr_base", "params_m", "test_ppl", "repeats",
                                          "test_box_hmean", "test_map", "mean_active_experts"])


def test_check_record_names_the_file_and_the_seed():
    record = {"runs": [{"seed": 1, "metrics": {"test_micro_f1": 50.0}}, {"seed": 2, "metrics": {"test_micro_f1": 150.0}}],
              "aggregate": {"test_micro_f1": {"mean": 100.0}}}
    with pytest.raises(MetricRangeError, match=r"results/x/d/m\.json: .*seed 2: test_micro_f1 = 150\.0"):
        check_record(record, "results/x/d/m.json")
    record["runs"][1]["metrics"]["test_micro_f1"] = 50.0
    check_record(record, "results/x/d/m.json")


class Broken(Toy):
    """Reports a percent-scale F1 as 150: a bug the runner must refuse to store."""

    def evaluate(self, run, model, data, seed, summary):
        return {**super().evaluate(run, model, data, seed, summary), "test_micro_f1": 150.0}


def test_runner_refuses_to_store_an_impossible_value(tmp_path, paper_file):  # noqa: F811
    with pytest.raises(MetricRangeError, match=r"pshgcn\.json: .*test_micro_f1 = 150\.0"):
        run(_cfg(tmp_path, "seed=1"), Broken(paper_file))
    assert not (tmp_path / "results" / "pshgcn" / "dblp" / "pshgcn.json").exists()


def test_report_reading_an_impossible_value_names_the_file(tmp_path):
    path = tmp_path / "gaga" / "tolokers" / "gaga.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"paper": "gaga", "dataset": "tolokers", "model": "gaga", "scale": "full",
                                "complete": True, "runs": [{"seed": 0, "metrics": {"test_auc": 130.0}}],
                                "aggregate": {"test_auc": {"mean": 130.0}}}))
    with pytest.raises(MetricRangeError, match=r"gaga/tolokers/gaga\.json: .*test_auc = 130\.0"):
        scan(tmp_path)


def test_every_committed_record_is_within_range():
    for path in sorted((REPO_ROOT / "results").glob("*/*/*.json")):
        record = json.loads(path.read_text())
        if isinstance(record, dict) and "runs" in record:
            check_record(record, Path(path).relative_to(REPO_ROOT))
