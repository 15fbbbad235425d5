"""The GPU check cannot rot (issue 40): the same script, DEVICE=cpu at tiny sizes, end to end; the plan and its errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from shared import gpu_check
from shared.paths import REPO_ROOT

RECIPES = ["replications/evomoe/gpu/run.sh", "replications/rep/gpu/check.sh", "replications/mmlayout/gpu.sh"]


def test_recipes_use_the_harness_results_key() -> None:
    """`results_dir=` was renamed `paths.results_dir=` (Key 'results_dir' is not in struct): every recipe composes."""
    for script in RECIPES:
        text = (REPO_ROOT / script).read_text()
        assert "results_dir=" not in text.replace("paths.results_dir=", ""), script


def test_plan_names_real_claims_minutes_and_both_sizes() -> None:
    plan = gpu_check.load_plan(gpu_check.PLAN)
    names = [p["name"] for p in plan["parts"]]
    assert names == ["evomoe", "moesys", "ppyoloe_r", "mmlayout", "rep"]
    assert all(p["minutes"] > 0 and p["budget_s"] >= p["minutes"] * 60 for p in plan["parts"])
    assert plan["budget_s"] == 660


@pytest.mark.slow
def test_cpu_check_end_to_end_and_merge(tmp_path: Path) -> None:
    """Every part composes, runs a few steps on the CPU, writes its record with provenance, and the merge reads it
    into a tmp results folder (never results/)."""
    out, results = tmp_path / "run", tmp_path / "results"
    done = subprocess.run([sys.executable, "-m", "shared.gpu_check", "--device", "cpu", "--out", str(out)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert {k: v["status"] for k, v in summary["parts"].items()} == dict.fromkeys(
        ["evomoe", "moesys", "ppyoloe_r", "mmlayout", "rep"], "ok"), summary
    for part in summary["parts"]:
        record = json.loads((out / f"{part}.json").read_text())
        assert record["provenance"]["name"] == "cpu" and record["provenance"]["torch"] and record["outputs"]
    assert done.stdout.splitlines()[-1].startswith("summary: 5 of 5 part(s) finished")
    merged = subprocess.run([sys.executable, "-m", "shared.gpu_check", "merge", str(out), "--results", str(results)],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    for path in ("evomoe/wikitext2/evomoe.json", "evomoe/wikitext2/switch.json", "mmlayout/funsd/mmlayout.json",
                 "moesys/gpu/ring_cpu.json", "ppyoloe_r/gpu/check_cpu.json"):
        assert (results / path).is_file(), (path, merged.stdout)
    assert json.loads((results / "evomoe/wikitext2/evomoe.json").read_text())["complete"]
    assert "kept in" in merged.stdout  # rep: a cost measurement, not merged
    # A second merge changes nothing and refuses nothing; a different measurement file is not replaced.
    ring = results / "moesys/gpu/ring_cpu.json"
    ring.write_text("{}\n")
    again = subprocess.run([sys.executable, "-m", "shared.gpu_check", "merge", str(out), "--results", str(results)],
                           cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 2 and "FORCE=1" in again.stdout and ring.read_text() == "{}\n"


def write_plan(tmp_path: Path, **part: object) -> Path:
    base = {"name": "p", "paper": "moesys", "minutes": 1, "budget_s": 60, "estimate": "x", "claims": ["ring_memory"],
            "decides": "x", "command": "echo hi", "needs": [], "merge": "none", "sizes": {"gpu": {}, "tiny": {}}}
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump({"budget_s": 60, "parts": [{**base, **part}]}))
    return plan


def run_main(tmp_path: Path, plan: Path, *args: str) -> tuple[int, dict]:
    code = gpu_check.main(["--plan", str(plan), "--device", "cpu", "--out", str(tmp_path / "o"), *args])
    record = tmp_path / "o" / "p.json"
    return code, json.loads(record.read_text()) if record.is_file() else {}


def test_absent_peer_library_skips_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, record = run_main(tmp_path, write_plan(tmp_path, needs=["no_such_cuda_kernel_lib"]))
    assert code == 0 and record["status"] == "skipped"
    assert "needs no_such_cuda_kernel_lib (a peer library), absent here" in capsys.readouterr().out


def test_part_stops_at_its_budget_and_says_so(tmp_path: Path) -> None:
    code, record = run_main(tmp_path, write_plan(tmp_path, command="sleep 30", budget_s=1))
    assert code == 1 and record["status"] == "timeout" and record["seconds"] < 15


def test_failed_part_is_recorded_and_the_next_part_runs(tmp_path: Path) -> None:
    code, record = run_main(tmp_path, write_plan(tmp_path, command="echo boom; exit 3"))
    assert code == 1 and record["status"] == "failed" and record["returncode"] == 3 and record["log_tail"] == ["boom"]


@pytest.mark.parametrize(("args", "says"), [
    (["--part", "nope"], "unknown part 'nope'"),
    (["--budget-s", "0"], "BUDGET_S=0"),
])
def test_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str) -> None:
    code, _ = run_main(tmp_path, write_plan(tmp_path), *args)
    err = capsys.readouterr().err
    assert code == 2 and says in err and err.count("\n") == 1


def test_unknown_claim_or_device_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main(tmp_path, write_plan(tmp_path, claims=["no_such_claim"]))[0] == 2
    assert "no_such_claim" in capsys.readouterr().err
    assert gpu_check.main(["--plan", str(write_plan(tmp_path)), "--device", "tpu"]) == 2
    assert "DEVICE='tpu'" in capsys.readouterr().err


def test_merge_refuses_a_folder_that_is_no_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert gpu_check.main(["merge", str(tmp_path), "--results", str(tmp_path / "r")]) == 2
    assert "not a gpu-check run folder" in capsys.readouterr().err


@pytest.mark.skipif(not os.environ.get("REPLICATIONS_MIRROR"), reason="no data mirror: the stage scripts copy from it")
@pytest.mark.parametrize("script, files", [
    ("replications/evomoe/gpu/stage.sh", ["data/wikitext-2/wiki.train.tokens", "data/wikitext-2/wiki.test.tokens"]),
    ("replications/rep/gpu/stage.sh", ["data/FB15k-237/raw/train.txt", "data/WN18RR/raw/test.txt"]),
])
def test_the_stage_scripts_a_gpu_session_runs_first_copy_their_data(tmp_path, script, files):
    """The GPU recipe's first step (conf/gpu_check.yaml): each stage script fills data/ in its folder."""
    done = subprocess.run(["bash", str(REPO_ROOT / script)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert all((tmp_path / f).stat().st_size > 0 for f in files)
