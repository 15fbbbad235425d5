"""The moesys package end to end: the smoke protocol through the runner, the claim statuses the page derives
from the measurements, and the GPU script's CPU smoke path."""

from __future__ import annotations

import json

import pytest
import yaml

from replications.moesys import REPLICATION, gpu_ring, report
from shared.runner import run
from tests.conftest import compose_cfg


@pytest.mark.parametrize("model", ["moesys/markov_tokens", "moesys_elastic"])
def test_smoke_protocol_writes_a_record(tmp_path, model):
    cfg = compose_cfg("paper=moesys", "dataset=markov_tokens", f"model={model}", "scale=smoke", "tracker=none",
                      f"results_dir={tmp_path}")
    from shared.smoke import apply_smoke

    apply_smoke(cfg)
    record = run(cfg, REPLICATION)
    m = record["runs"][0]["metrics"]
    if model == "moesys_elastic":
        assert m["test_final_loss"] < m["first_loss"]  # learns the planted chain
    else:
        assert m["test_exact_vs_resident"] == 1.0 and m["test_read_gb_per_s"] > 0
        assert record["runs"][0]["train"]["settings"][0]["rows"][1]["loads_per_pass"] == 2.0  # S = 2 sections
    assert report.main([str(tmp_path)]) == 0  # smoke records are not full scale: every mechanism "not run"
    claims = json.loads((tmp_path / "moesys" / "claims.json").read_text())["claims"]
    assert {c["status"] for c in claims} == {"not testable here", "not run"}


def _ring(exact: float, speedup: float, every: float = 1.0) -> dict:
    return {"runs": [{"metrics": {"test_exact_vs_resident": exact,
                                  "test_ring_k2_speedup_vs_load_then_compute": speedup,
                                  "ring_k2_faster_in_every_repeat": every,
                                  "repeats": 5.0}}]}


def _elastic(phases: list[int], diff: float) -> dict:
    return {"runs": [{"train": {"phases": phases, "max_abs_diff": diff}}]}


@pytest.mark.parametrize(("records", "status"), [
    ({"ring_memory": _ring(1.0, 1.4)}, "mechanism shown"),
    ({"ring_memory": _ring(0.0, 1.4)}, "mechanism not shown"),  # outputs differ from the resident model
    ({"ring_memory": _ring(1.0, 0.97)}, "mechanism not shown"),  # no gain from overlapping
    ({"ring_memory": _ring(1.0, 1.05, every=0.0)}, "mechanism not shown"),  # within the repeats' noise
    ({}, "not run"),
])
def test_ring_claim_status_follows_the_measurement(records, status):
    claim = next(c for c in yaml.safe_load(report.PAPER.read_text())["claims"] if c["id"] == "ring_memory")
    assert report.claim_status(claim, records)[0] == status


@pytest.mark.parametrize(("records", "status"), [
    ({"elastic": _elastic([2, 1, 2], 5e-7)}, "mechanism shown"),
    ({"elastic": _elastic([2, 1, 2], 3e-2)}, "mechanism not shown"),  # the curve did not continue
    ({"elastic": _elastic([2], 0.0)}, "mechanism not shown"),  # nobody left
])
def test_elastic_claim_status_follows_the_measurement(records, status):
    claim = next(c for c in yaml.safe_load(report.PAPER.read_text())["claims"] if c["id"] == "elastic_training")
    assert report.claim_status(claim, records)[0] == status


def test_deepspeed_claims_are_never_given_a_number():
    paper = yaml.safe_load(report.PAPER.read_text())
    for c in paper["claims"]:
        if "DeepSpeed" in c["text"]:
            assert report.claim_status(c, {"ring_memory": _ring(1.0, 2.0)})[0] == "not testable here"


def test_gpu_script_cpu_smoke(tmp_path):
    out = tmp_path / "ring.json"
    assert gpu_ring.main(["--device", "cpu", "--size", "tiny", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["exact"] and record["environment"]["versions"]["torch"]
    assert [r["config"] for r in record["settings"][0]["rows"]] == ["resident", "load_then_compute", "ring_k2"]
