"""The SLURM launcher presets (conf/hydra/launcher/slurm.yaml, slurm_gpu.yaml; issue 41) compose on submitit's
SlurmLauncher with a job name, a time limit, CPUs, memory, array parallelism and requeue; nothing is submitted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from shared.resolvers import array_name

ROOT = Path(__file__).resolve().parents[1]
SLURM = "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"
RUN = ["paper=gaga", "dataset=tolokers", "model=gaga_mlp", "seed=0"]


def launcher(preset: str, *overrides: str) -> DictConfig:
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose("config", overrides=[*overrides, f"hydra/launcher={preset}"], return_hydra_config=True).hydra.launcher


@pytest.mark.parametrize("preset, gpus", [("slurm", None), ("slurm_gpu", 1)])
def test_a_slurm_preset_composes_on_submitit_with_its_keys(preset, gpus):
    cfg = launcher(preset, *RUN)
    assert cfg._target_ == SLURM
    assert cfg.name == "gaga/tolokers/mlp/s0"  # <paper>/<dataset>/<model>/s<seed>: the model's own name
    for key in ("timeout_min", "cpus_per_task", "mem_gb", "array_parallelism", "max_num_timeout"):
        assert isinstance(cfg[key], int) and cfg[key] > 0, key  # max_num_timeout > 0: requeued on its time limit
    assert cfg.gpus_per_node == gpus
    assert cfg.signal_delay_s == 120 and "partition" in cfg  # submitit_slurm's own keys underneath
    assert launcher(preset, "paper=pshgcn", "dataset=acm").name == "pshgcn/acm/pshgcn"  # no seed: the protocol's


def test_the_app_prints_the_preset_resolved(tmp_path):
    """``--cfg all --resolve``: ``--cfg hydra`` prints the hydra node alone, where the name's ${paper.name} is not."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WANDB_MODE": "disabled"}
    shown = subprocess.run([sys.executable, "-m", "replications", *RUN, "hydra/launcher=slurm_gpu", "--cfg", "all",
                            "--resolve"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    printed = yaml.safe_load(shown.stdout)["hydra"]["launcher"]
    assert printed["name"] == "gaga/tolokers/mlp/s0" and printed["gpus_per_node"] == 1 and printed["_target_"] == SLURM


def test_one_array_is_named_after_its_sweep():
    """All the jobs of a --multirun are one SLURM array with one name, resolved before the sweep expands (where a
    swept seed is still null): a swept key shows its sweep, from the command line or the sweep config's params."""
    assert array_name(["paper=gaga", "seed=0,1,2"], None, "gaga", "tolokers", "mlp", None) == "gaga/tolokers/mlp/s0,1,2"
    assert array_name([], {"seed": "range(1,6)", "model.K": "3,5"}, "pshgcn", "acm", "pshgcn", None) \
        == "pshgcn/acm/pshgcn/srange(1,6)"
    assert array_name(["seed=7"], {"seed": "range(1,6)"}, "pshgcn", "acm", "pshgcn", 7) == "pshgcn/acm/pshgcn/s7"
    # each job's model is its own paper's default: the master config's would name the wrong one
    assert array_name(["paper=gaga,pshgcn", "seed=3"], None, "pshgcn", "dblp", "pshgcn", 3) == "gaga,pshgcn/dblp/*/s3"
    assert array_name(["paper=evomoe"], None, "evomoe", "wikitext2", "evomoe", None) == "evomoe/wikitext2/evomoe"
