"""``make replicate-<paper> LAUNCHER=slurm`` without a cluster (replications/cluster.py; issue 41): a bad launcher is one
line, the preset reaches submitit (requeue included), and a requeued task resumes from its partial record instead of
training its seed again. The run on a real SLURM cluster: tests/test_slurm_cluster.py. No data is read (a stub
replication trains), so this file takes a few seconds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import replications
from replications import cluster, replicate
from replications.gaga import REPLICATION as GAGA
from shared.replication import Replication, Run

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ["dataset=tolokers", "model=mlp", "scale=smoke", "tracker=none"]


@pytest.mark.parametrize("argv, message", [
    (["gaga", "launcher=nope"], "error: unknown launcher 'nope'; valid: slurm, slurm_gpu, local"),
    (["gaga", "launcher="], "error: unknown launcher ''; valid: slurm, slurm_gpu, local"),
])
def test_an_unknown_launcher_is_one_line(capsys, argv, message):
    assert replicate.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(message)


def test_make_passes_launcher_to_the_run():
    shown = subprocess.run(["make", "-n", "replicate-gaga", "LAUNCHER=slurm", "dataset=tolokers"], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert "replications.replicate gaga dataset=tolokers" in shown.stdout and " launcher=slurm " in shown.stdout


def test_the_slurm_preset_reaches_submitit_with_its_requeue(monkeypatch, tmp_path):
    monkeypatch.setattr(cluster.shutil, "which", lambda name: name)  # no sbatch needed to build it
    params, run_dir = cluster.launcher_settings("slurm", ["hydra.launcher.partition=cpu", f"hydra.sweep.dir={tmp_path}"])
    assert run_dir == tmp_path and params["timeout_min"] == 120 and params["partition"] == "cpu"
    slurm = cluster.executor("slurm", params, run_dir)._executor
    assert slurm.max_num_timeout == 3  # the preset's max_num_timeout: requeued up to 3 times on its time limit
    assert slurm.parameters["partition"] == "cpu" and slurm.parameters["array_parallelism"] == 16
    assert slurm.parameters["cpus_per_task"] == 1 and slurm.parameters["time"] == 120  # threads' default: 1 core
    params, _ = cluster.launcher_settings("slurm", ["threads=4", f"hydra.sweep.dir={tmp_path}"])
    assert params["cpus_per_task"] == 4  # one core per torch thread the run pins
    assert cluster.launcher_settings("slurm_gpu", ["threads=4", f"hydra.sweep.dir={tmp_path}"])[0]["cpus_per_task"] == 8


class Stub(Replication):
    """GAGA's paper and config, a model that is never trained twice: train() counts its calls."""

    name, paper_file = "gaga", GAGA.paper_file

    def __init__(self) -> None:
        self.trained = 0

    def load_data(self, run: Run) -> Any:
        return None

    def build_model(self, run: Run, data: Any) -> Any:
        return None

    def train(self, run: Run, model: Any, model_data: Any, seed: int, log: Any) -> dict[str, Any]:
        self.trained += 1
        return {"epochs": 1}

    def evaluate(self, run: Run, model: Any, data: Any, seed: int, summary: dict[str, Any]) -> dict[str, float]:
        return {"test_auc": 60.0 + seed, "test_ap": 20.0, "test_f1_macro": 50.0}


def test_a_requeued_task_resumes_from_its_partial_record(monkeypatch, tmp_path):
    stub = Stub()
    monkeypatch.setattr(replications, "get", lambda paper: stub)
    monkeypatch.setattr(sys, "argv", ["pytest"])  # SeedJob sets the command its record states
    [(_, _, planned)] = replicate.plan_configs("gaga", SMOKE)
    cfg = cluster.task_config(planned, 3, tmp_path)
    job = cluster.SeedJob(["replicate.py", "gaga", "launcher=slurm", *SMOKE])
    path = Path(job(cfg))
    assert path == tmp_path / "tolokers.mlp.s3" / "gaga" / "tolokers" / "mlp.json" and stub.trained == 1
    first = json.loads(path.read_text())
    assert first["environment"]["command"] == "replicate.py gaga launcher=slurm " + " ".join(SMOKE)

    # Preempted after its seed finished, before the record was written: what the runner had left is the partial file
    path.with_suffix(".partial.json").write_text(json.dumps({"complete": False, "runs": first["runs"],
                                                             "config": first["config"]}))
    path.unlink()
    delayed = job.checkpoint(cfg)  # what submitit requeues: this same call
    assert delayed.function is job and delayed.args == (cfg,)
    assert Path(delayed.function(*delayed.args)) == path and stub.trained == 1  # the seed is not trained again
    again = json.loads(path.read_text())
    assert again["runs"] == first["runs"] and again["complete"] and not path.with_suffix(".partial.json").exists()

    job(cfg)  # requeued once more after the record was written: nothing runs, the record stays
    assert stub.trained == 1 and json.loads(path.read_text()) == again
