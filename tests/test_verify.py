"""Re-running a committed seed from its stored config: agreement is reported, a doctored number is caught."""

from __future__ import annotations

import json

from replications.verify import compare_metrics, verify
from shared.runner import run
from tests.test_runner import Toy, _cfg, paper_file  # noqa: F401  (fixture)


def test_rerun_of_a_committed_seed_agrees_and_a_doctored_number_is_caught(tmp_path, paper_file):  # noqa: F811
    run(_cfg(tmp_path), Toy(paper_file))
    path = tmp_path / "results" / "pshgcn" / "dblp" / "pshgcn.json"
    assert verify(path, seeds=[2], replication=Toy(paper_file))

    record = json.loads(path.read_text())
    record["runs"][1]["metrics"]["test_micro_f1"] += 0.5  # a number the code did not produce
    path.write_text(json.dumps(record))
    assert not verify(path, seeds=[2], replication=Toy(paper_file))
    assert verify(path, seeds=[1], replication=Toy(paper_file))  # the untouched seed still agrees


def test_timings_are_not_compared_and_nan_equals_nan():
    rows = compare_metrics({"test_cer": float("nan"), "latency_ms_median": 10.0, "test_f1": 0.5},
                           {"test_cer": float("nan"), "latency_ms_median": 99.0, "test_f1": 0.5 + 1e-12}, rtol=1e-6)
    assert [(name, same) for name, _, _, same in rows] == [("test_cer", True), ("test_f1", True)]
