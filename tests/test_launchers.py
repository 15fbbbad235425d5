"""The same config inside every job (issue 41): a --multirun under joblib (a worker process) and submitit's local
executor (a process per job) runs the config the basic launcher runs, the paper's smoke block applied.

Before shared.compose the smoke block was applied in the launching process only: joblib and submitit compose each
job's config in the job's own process, so under scale=smoke the jobs trained the full-size model (GAGA's MLP 64 wide
for 30 epochs instead of 16 for 2) and wrote smoke-named records of it. Each job here is GAGA's MLP on Tolokers under
scale=smoke (well under a second of training); the cost is the processes' start (importing torch), ~10 s a job on a
loaded 2-core machine, ~75 s for the three launchers together, hence slow.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from omegaconf import OmegaConf, open_dict

ROOT = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("REPLICATIONS_MIRROR") or ROOT.parent / "shared" / "data")
RUN = ["paper=gaga", "dataset=tolokers", "model=gaga_mlp", "scale=smoke", "tracker=none"]
SEEDS = (0, 1)  # one job per seed: a 2-job multirun
LAUNCHERS = {  # hydra/launcher=<name> and what keeps it small here
    "joblib": ["hydra.launcher.n_jobs=2"],  # 2 workers: with n_jobs=1 joblib runs the jobs in this very process
    "submitit_local": ["hydra.launcher.timeout_min=5"],
}

needs_tolokers = pytest.mark.skipif(not (MIRROR / "tolokers" / "tolokers.npz").exists(),
                                    reason=f"{MIRROR}/tolokers/tolokers.npz is absent: set REPLICATIONS_MIRROR")


def multirun(tmp_path: Path, launcher: str, *extra: str) -> Path:
    """Run the 2-job smoke multirun under hydra/launcher=<launcher>; returns its sweep folder."""
    sweep = tmp_path / launcher
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WANDB_MODE": "disabled", "OMP_NUM_THREADS": "1",
           "REPLICATIONS_MIRROR": str(MIRROR), "REPLICATIONS_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "replications", "--multirun", *RUN, f"seed={','.join(map(str, SEEDS))}",
                           f"hydra/launcher={launcher}", f"hydra.sweep.dir={sweep}", *extra],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return sweep


def jobs(sweep: Path) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Each job's (.hydra/config.yaml, result record), in job order."""
    out = []
    for job in range(len(SEEDS)):
        config = yaml.safe_load((sweep / str(job) / ".hydra" / "config.yaml").read_text())
        record = json.loads((sweep / str(job) / "gaga" / "tolokers" / "mlp.json").read_text())
        out.append((config, record))
    return out


def without_paths(config: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k != "paths"}  # a record's results_dir is its own job's folder


@pytest.fixture(scope="module")
def basic(tmp_path_factory) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return jobs(multirun(tmp_path_factory.mktemp("basic"), "basic"))


def smoke_values(config: dict[str, Any]) -> dict[str, Any]:
    """The paper's smoke block, restricted to the keys this model has (shared.smoke skips the others)."""
    block = OmegaConf.load(ROOT / "conf" / "paper" / "gaga.yaml").smoke
    cfg = OmegaConf.create(config)
    return {k: v for k, v in block.items() if OmegaConf.select(cfg, k, default=None) is not None}


@needs_tolokers
@pytest.mark.slow
@pytest.mark.parametrize("launcher", list(LAUNCHERS))
def test_every_job_runs_the_smoke_config_the_basic_launcher_runs(launcher, basic, tmp_path):
    launched = jobs(multirun(tmp_path, launcher, *LAUNCHERS[launcher]))
    for job, ((config, record), (basic_config, basic_record)) in enumerate(zip(launched, basic)):
        smoke = smoke_values(config)
        assert {"scale.max_epochs", "model.hidden"} <= set(smoke)
        for key, value in smoke.items():  # in the job's .hydra/config.yaml and in the config its record stores
            assert OmegaConf.select(OmegaConf.create(config), key) == value, (launcher, job, key)
            assert OmegaConf.select(OmegaConf.create(record["config"]), key) == value, (launcher, job, key)
        assert config == basic_config
        assert without_paths(record["config"]) == without_paths(basic_record["config"])
        assert [r["metrics"] for r in record["runs"]] == [r["metrics"] for r in basic_record["runs"]]


def test_the_task_function_finishes_a_config_a_plain_loader_composed(tmp_path):
    """A launcher that composes with a loader of its own (not shared.compose's): the task function applies the smoke
    block in the job's process and rewrites the job's .hydra/config.yaml, which Hydra saved before calling it."""
    from hydra import compose, initialize_config_dir
    from hydra.core.hydra_config import HydraConfig

    from shared.compose import finish_job_config

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):  # Hydra's own loader here
        cfg = compose("config", overrides=[*RUN, "seed=0", "hydra.mode=MULTIRUN"], return_hydra_config=True)
    with open_dict(cfg):
        cfg.hydra.runtime.output_dir = str(tmp_path)
    task = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"])
    saved = tmp_path / ".hydra" / "config.yaml"
    saved.parent.mkdir()
    saved.write_text(OmegaConf.to_yaml(task))
    assert task.scale.max_epochs == 30  # as composed: the full-size budget
    HydraConfig.instance().set_config(cfg)
    try:
        finish_job_config(task)
    finally:
        HydraConfig.instance().cfg = None
    assert task.scale.max_epochs == 2 and task.model.hidden == 16
    assert yaml.safe_load(saved.read_text()) == OmegaConf.to_container(task)
