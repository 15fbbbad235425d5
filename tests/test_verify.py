"""Re-running a committed seed from its stored config: agreement is reported, a doctored number is caught; the
committed ISA is compared first (exact on the same one, a stated tolerance elsewhere); timings are excluded."""

from __future__ import annotations

import json
import math

import pytest
import torch

from replications.verify import compare_metrics, excluded, main, recorded_threads, rerun_config, tolerance, verify
from shared.config_check import validate
from shared.paths import REPO_ROOT
from shared.records import complete_records
from shared.runner import check_choices, run
from tests.test_runner import Toy, _cfg, paper_file  # noqa: F401  (fixture)

AMX = {"cpu_flags": ["amx_bf16", "amx_tile", "avx512_bf16"], "onednn_isa": "avx512_core_amx",
       "onednn_bf16_matmul": "brg_matmul:avx10_1_512_amx", "cpu_capability": "AVX512", "precision": "bf16", "env": {}}
BF16 = {**AMX, "onednn_isa": "avx512_core_bf16", "onednn_bf16_matmul": "brg_matmul:avx512_core_bf16",
        "env": {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"}}


def _committed(tmp_path, paper_file):  # noqa: F811
    run(_cfg(tmp_path), Toy(paper_file))
    return tmp_path / "results" / "pshgcn" / "dblp" / "pshgcn.json"


def test_rerun_of_a_committed_seed_agrees_and_a_doctored_number_is_caught(tmp_path, paper_file, capsys):  # noqa: F811
    path = _committed(tmp_path, paper_file)
    assert verify(path, seeds=[2], replication=Toy(paper_file))
    out = capsys.readouterr().out
    assert "same ISA (" in out and "compared exactly" in out and "verified: every re-run metric agrees" in out

    record = json.loads(path.read_text())
    record["runs"][1]["metrics"]["test_micro_f1"] += 0.5  # a number the code did not produce
    path.write_text(json.dumps(record))
    assert not verify(path, seeds=[2], replication=Toy(paper_file))
    assert "NOT verified: a metric differs on the committed ISA" in capsys.readouterr().out
    assert verify(path, seeds=[1], replication=Toy(paper_file))  # the untouched seed still agrees

    record["runs"][1]["metrics"]["test_micro_f1"] -= 0.5
    record["runs"][1]["metrics"]["test_micro_f1"] *= 1 + 1e-12  # the last bits: exact on the same ISA fails
    path.write_text(json.dumps(record))
    assert not verify(path, seeds=[2], replication=Toy(paper_file))
    assert verify(path, seeds=[2], rtol=1e-9, replication=Toy(paper_file))  # within a tolerance asked for


def test_a_different_isa_is_said_before_the_numbers(tmp_path, paper_file, capsys):  # noqa: F811
    # the mmLayout case: committed on AMX bf16, re-run where oneDNN uses avx512_core_bf16 kernels
    path = _committed(tmp_path, paper_file)
    record = json.loads(path.read_text())
    record["environment"]["numerics"] = AMX
    record["runs"][1]["metrics"]["test_micro_f1"] += 0.68  # 33.88 vs 34.56: what bf16 kernels did to one seed
    path.write_text(json.dumps(record))
    assert not verify(path, seeds=[2], replication=Toy(paper_file), here=BF16)
    out = capsys.readouterr().out
    assert ("different ISA (committed: avx512_core_amx, bf16 matmul brg_matmul:avx10_1_512_amx, ATen AVX512, here: "
            "avx512_core_bf16, bf16 matmul brg_matmul:avx512_core_bf16, ATen AVX512): exactness not expected (bf16 "
            "autocast: kernels on different ISAs round differently), compared at rtol 1e-06") in out
    assert "exactness was not expected here" in out and "NOT verified: a metric differs on the committed ISA" not in out
    assert verify(path, seeds=[2], rtol=0.05, replication=Toy(paper_file), here=BF16)


def test_tolerance_by_isa():
    record = {"environment": {"numerics": AMX}, "config": {}}
    assert tolerance(record, AMX, None)[:2] == (0.0, True)
    assert tolerance(record, AMX, 1e-4)[:2] == (1e-4, True)
    assert tolerance(record, {**AMX, "onednn_bf16_matmul": None}, None)[:2] == (0.0, True)  # no probe here: ISA decides
    assert tolerance(record, {**AMX, "cpu_capability": "AVX2"}, None)[:2] == (1e-6, False)
    assert tolerance(record, BF16, 1e-3)[:2] == (1e-3, False)
    old = {"environment": {"hardware": {"cpu": "Intel(R) Xeon(R) Processor"}}, "config": {"model": {"precision": "bf16"}}}
    use, exact, why = tolerance(old, AMX, None)  # a record from before the ISA was recorded (mmLayout's)
    assert (use, exact) == (1e-6, False)
    assert why.startswith("committed ISA not recorded (the record predates it; its CPU: Intel(R) Xeon(R) Processor")
    assert "bf16 autocast" in why


def test_timings_are_not_compared_and_nan_equals_nan():
    rows = compare_metrics({"test_cer": float("nan"), "latency_ms_median": 10.0, "test_f1": 0.5},
                           {"test_cer": float("nan"), "latency_ms_median": 99.0, "test_f1": 0.5 + 1e-12}, rtol=1e-6)
    assert [(name, same) for name, _, _, same in rows] == [("test_cer", True), ("test_f1", True)]
    assert [same for *_, same in compare_metrics({"a": 0.5, "b": math.nan}, {"a": 0.5 + 1e-12, "b": math.nan}, 0.0)] \
        == [False, True]
    assert set(excluded({"a2a_ms_r100_4KiB": 1.0, "train_tokens_per_s": 2.0, "test_ppl": 3.0})) == \
        {"a2a_ms_r100_4KiB", "train_tokens_per_s"}


def test_a_record_of_timings_only_has_nothing_to_compare(tmp_path, capsys):
    # HetuMoE's committed results: all-to-all times only. Not re-run (no replication is even looked up).
    path = tmp_path / "hetumoe.json"
    metrics = {"a2a_ms_r100_4KiB": 1.1, "a2a_ms_r1000_1MiB": 52.3}
    path.write_text(json.dumps({"paper": "hetumoe", "dataset": "testbed_2x2", "model": "hetumoe", "complete": True,
                                "runs": [{"seed": 0, "metrics": metrics}]}))
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "excluded, a timing: it measures the machine, not the code: a2a_ms_r100_4KiB, a2a_ms_r1000_1MiB" in out
    assert "nothing to compare: every metric of hetumoe/testbed_2x2/hetumoe is a timing; not re-run" in out


@pytest.mark.parametrize("rtol", ["inf", "nan", "-1e-6", "2", "1e300"])
def test_absurd_rtol_is_refused_in_one_line(tmp_path, capsys, rtol):
    path = tmp_path / "r.json"
    path.write_text("{}")
    assert main([str(path), f"--rtol={rtol}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is invalid: give a finite tolerance in [0, 1]" in err
    with pytest.raises(ValueError, match="finite tolerance"):
        verify(path, rtol=float(rtol))


def test_a_record_made_before_the_threads_key_reruns_on_the_threads_it_ran_with(tmp_path, paper_file, capsys):  # noqa: F811
    """Records before conf/config.yaml's `threads` stored none (the MoE papers' paper.protocol.threads, read by no code
    now, or nothing): verify re-runs them on the count each recorded, not on torch's default, and agrees."""
    run(_cfg(tmp_path, "threads=2"), Toy(paper_file))
    path = tmp_path / "results" / "pshgcn" / "dblp" / "pshgcn.json"
    record = json.loads(path.read_text())
    del record["config"]["threads"]
    record["config"]["paper"]["protocol"]["threads"] = 2  # where the MoE papers kept it
    path.write_text(json.dumps(record))
    default = torch.get_num_threads()
    torch.set_num_threads(1)
    toy = Toy(paper_file)
    try:
        assert verify(path, seeds=[2], replication=toy)
    finally:
        torch.set_num_threads(default)
    assert toy.threads_seen == [2] and "thread count differs" not in capsys.readouterr().out
    for r in record["runs"]:  # older still: no per-seed count, the record's environment says it
        del r["torch_threads"]
    assert recorded_threads(record, [2]) == 2
    del record["environment"]["hardware"]["torch_threads"]
    assert recorded_threads(record, [2]) is None  # unknown: torch's default, as such a record ran


def test_every_committed_record_still_composes_for_a_rerun(tmp_path):
    """What `make verify` re-runs from each committed record's stored config passes the runner's checks, on the threads
    the record ran with."""
    records = [(p, r) for p, r in complete_records(REPO_ROOT / "results") if r.get("config")]
    assert records
    for path, record in records:
        seed = sorted(r["seed"] for r in record["runs"])[0]
        cfg = rerun_config(record, [seed], tmp_path)
        check_choices(cfg)
        validate(cfg)
        want = record["config"].get("threads", recorded_threads(record, [seed]))
        assert cfg.threads == want, path
