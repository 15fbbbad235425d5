"""``make replicate-<paper> LAUNCHER=slurm``: the protocol's seeds as SLURM job arrays, merged afterwards (issue 41).

``replications.replicate`` plans and checks the protocol exactly as for one process (plan_configs: the same
composition, smoke block and hand-run folder), then, given ``launcher=slurm`` (``slurm_gpu``; ``local``: submitit's
local executor, processes on this machine), submits one job array per (dataset, model), one task per seed, through
submitit with the preset conf/hydra/launcher/<preset>.yaml (``hydra.launcher.<key>=`` overrides it, e.g. partition).
A task runs that plan's config with ``seed`` set to its seed and ``paths.results_dir`` set to its own folder,
``<run>/<dataset>.<model>.s<seed>/`` (``<run>``: Hydra's sweep folder, multirun/<date>/<time>/, or
``hydra.sweep.dir=``): never results/. It returns at once, naming the folders and the one merge command
(``python -m shared.merge --roots <destination> <run>/*``), which writes the record the single process would write.

Requeue (the preset's max_num_timeout; always on preemption): submitit calls ``SeedJob.checkpoint``, which resubmits
the same call; it resumes from the task's partial record, and a task whose record is already written returns it
without running. Submitting again into the same ``hydra.sweep.dir`` skips the seeds already finished there.
"""

from __future__ import annotations

import copy
import math
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import submitit
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf, open_dict

import replications
from shared.config_check import ConfigError
from shared.paths import CONF_DIR, RESULTS
from shared.records import finished, read_json
from shared.runlog import RunLog
from shared.runner import result_path, run, seeds_of, stored_config

PRESETS = {"slurm": "slurm", "slurm_gpu": "slurm_gpu", "local": "submitit_local"}  # launcher= -> hydra/launcher=
class SubmitError(ConfigError):
    """The scheduler refused a submission (sbatch's own message, one line)."""


MIN_MINUTES = 10  # a time limit from a record never below this: a job's start (imports, data) is not in its seeds


def split_launcher(overrides: list[str]) -> tuple[str | None, list[str], list[str]]:
    """(launcher or None, the run's own overrides, the launcher's ``hydra.*`` ones); an unknown launcher: ConfigError."""
    chosen = [o.split("=", 1)[1] for o in overrides if o.split("=", 1)[0] == "launcher"]
    if not chosen:
        return None, overrides, []
    if chosen[-1] not in PRESETS:
        raise ConfigError(f"unknown launcher '{chosen[-1]}'; valid: {', '.join(PRESETS)} (LAUNCHER=slurm submits the "
                          "protocol's seeds as SLURM job arrays; without it the protocol runs in this process)")
    rest = [o for o in overrides if o.split("=", 1)[0] != "launcher" and not o.startswith("hydra.")]
    return chosen[-1], rest, [o for o in overrides if o.startswith("hydra.")]


def launcher_settings(launcher: str, hydra_overrides: list[str]) -> tuple[dict[str, Any], Path]:
    """The preset's submitit parameters, with the command line's ``hydra.launcher.*`` (and ``threads=``, which the CPU
    preset's cores follow), and the run's folder."""
    if launcher != "local" and not shutil.which("sbatch"):
        raise ConfigError(f"launcher={launcher} needs SLURM's sbatch on PATH: run it on the cluster's login node "
                          "(launcher=local runs the same jobs as processes on this machine)")
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=[f"hydra/launcher={PRESETS[launcher]}", *hydra_overrides],
                      return_hydra_config=True)
    params = cfg.hydra.launcher
    with open_dict(params):  # set per array below; the preset's own values name a --multirun's sweep
        params.name = params.submitit_folder = ""
    out = OmegaConf.to_container(params, resolve=True)
    out.pop("_target_", None)
    out.pop("submitit_folder")
    return out, Path(str(cfg.hydra.sweep.dir)).resolve()


def executor(launcher: str, params: dict[str, Any], run_dir: Path) -> submitit.AutoExecutor:
    """submitit's executor as hydra-submitit-launcher makes it from the same parameters."""
    from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf

    cluster = "local" if launcher == "local" else "slurm"
    params = dict(params)
    init = {f"{cluster}_max_num_timeout": params.pop("max_num_timeout")} if "max_num_timeout" in params else {}
    out = submitit.AutoExecutor(folder=run_dir / ".submitit" / "%j", cluster=cluster, **init)
    base = set(OmegaConf.structured(BaseQueueConf).keys())
    out.update_parameters(**{k if k in base else f"{cluster}_{k}": v for k, v in params.items()})
    return out


def measured_minutes(paper: str, dataset: str, model: str) -> int | None:
    """A time limit per seed from the committed record: (data + slowest seed) x 1.5, in minutes; None without one."""
    record, error = read_json(RESULTS / paper / dataset / f"{model}.json")
    if error is not None or not isinstance(record, dict) or not record.get("runs"):
        return None
    seconds = record.get("data_seconds", 0) + max(r.get("wall_seconds", 0) for r in record["runs"])
    return max(MIN_MINUTES, math.ceil(seconds * 1.5 / 60))


def task_config(cfg: DictConfig, seed: int, run_dir: Path) -> DictConfig:
    """The plan's config for one seed, writing into the task's own folder."""
    out = copy.deepcopy(cfg)
    with open_dict(out):
        out.seed = seed
        out.paths.results_dir = str(run_dir / f"{cfg.dataset.name}.{cfg.model.name}.s{seed}")
    return out


def done(cfg: DictConfig) -> bool:
    """Whether the task's record is written, by this very config (as the runner stores it; a resume compares the same)."""
    path = result_path(cfg)
    record, error = read_json(path) if path.is_file() else (None, "absent")
    if error is not None or not isinstance(record, dict) or not finished(record):
        return False
    return record.get("config") == stored_config(cfg)


class SeedJob(submitit.helpers.Checkpointable):
    """One seed inside its array task. Checkpointable: on a time limit or preemption submitit requeues this same call."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv  # the submitting command, which the record states (not submitit's own command line)

    def __call__(self, cfg: DictConfig) -> str:
        sys.argv = list(self.argv)
        path = result_path(cfg)
        if done(cfg):  # requeued after its record was written
            print(f"{path} is already written: nothing to run")
            return str(path)
        with RunLog(path):
            run(cfg, replications.get(str(cfg.paper.name)))  # resumes from the partial record's finished seeds
        return str(path)


def shown(path: Path) -> str:
    here = Path.cwd().resolve()
    return str(path.relative_to(here)) if path.is_relative_to(here) else str(path)


def submit(paper: str, configs: list[tuple[str, str, DictConfig]], launcher: str, hydra_overrides: list[str],
           destination: Path, measured: bool) -> None:
    """Submit one array per (dataset, model) and say where the records go and how to merge them.
    ``measured``: the protocol's own config, so its committed records may size the time limit."""
    params, run_dir = launcher_settings(launcher, hydra_overrides)
    timed = any(o.startswith("hydra.launcher.timeout_min=") for o in hydra_overrides)
    job, arrays = SeedJob(list(sys.argv)), []
    for _, _, cfg in configs:
        label = f"{paper}/{cfg.dataset.name}/{cfg.model.name}"
        tasks = [task_config(cfg, seed, run_dir) for seed in seeds_of(cfg)]
        kept = [t for t in tasks if not done(t)]
        if len(kept) < len(tasks):
            print(f"{label}: seeds {sorted(set(seeds_of(cfg)) - {t.seed for t in kept})} already finished in "
                  f"{shown(run_dir)}: not submitted again")
        if not kept:
            continue
        minutes = None if timed or not measured else measured_minutes(paper, cfg.dataset.name, cfg.model.name)
        ex = executor(launcher, {**params, "timeout_min": minutes or params["timeout_min"]}, run_dir)
        ex.update_parameters(name=f"{label}/s{','.join(str(t.seed) for t in kept)}")
        try:
            jobs = ex.map_array(job, kept)
        except (submitit.core.utils.FailedSubmissionError, subprocess.CalledProcessError, OSError) as exc:
            raise SubmitError(f"{launcher} did not take {label} ({len(arrays)} array(s) submitted before it): "
                              f"{str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__}") from exc
        ids = sorted({j.job_id.split("_")[0] for j in jobs})  # SLURM: one array id; local: a process per task
        arrays += ids
        print(f"submitted {label}: seeds {[t.seed for t in kept]} as {launcher} job {','.join(ids)} "
              f"({minutes or params['timeout_min']} min each) -> {shown(run_dir)}/{cfg.dataset.name}.{cfg.model.name}.s<seed>/")
    watch = (f"squeue -j {','.join(arrays)}" if arrays and launcher != "local" else
             "processes on this machine" if arrays else "nothing left to submit")
    print(f"records: {shown(run_dir)}/<dataset>.<model>.s<seed>/{paper}/..., logs {shown(run_dir)}/.submitit/ "
          f"({watch}); once they have finished, merge the seeds into {shown(destination)}:\n"
          f"python -m shared.merge --roots {shown(destination)} {shown(run_dir)}/*")
