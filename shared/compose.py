"""The config a run runs, made wherever Hydra composes it: in the launching process and inside every --multirun job.

What ``python -m replications`` does to a composed config before it runs (``finish_config``): the paper's ``smoke:``
block under scale=smoke (shared.smoke; a key given on the command line wins) and, for a single run, its own hand-run
folder (shared.destination.name_hand_run). The rest needs nothing here: a model file's alias (``model=gaga_mlp``) is
that file's own ``name: mlp``, and the override checks (check_choices, check_added_keys, validate) run in the task
function, which is called in the job's process under every launcher.

Hydra 1.3 has no hook after composition (1.4's ``on_compose_config`` callback). The basic launcher composes each
job's config in the launching process, but joblib composes it in a worker and submitit in the job itself (locally or
on a SLURM node), each with the config loader the launcher sent it, pickled. A patch applied in the launching process
only was lost there: the jobs trained the full-size model under scale=smoke (issue 41). So the app's loader is
``FinishingConfigLoader``, a subclass living in this importable module: pickled by reference, it finishes the config
in every process that composes one, and ``--cfg job``, a job's ``.hydra/config.yaml`` and its record all hold the
config that ran. ``finish_job_config`` does it once more in the task function (a no-op after this loader), for a
launcher that composes with a loader of its own.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NoReturn

from hydra._internal import hydra as hydra_internal
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.hydra_config import HydraConfig
from hydra.errors import HydraException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from shared.cli_errors import composition_error
from shared.config_check import one_line
from shared.destination import name_hand_run
from shared.smoke import apply_smoke


def refuse(exc: Exception | str) -> NoReturn:
    """A refused run: one line on stderr, exit 2."""
    print(f"error: {exc if isinstance(exc, str) else one_line(exc)}", file=sys.stderr)
    sys.exit(2)


def finish_config(cfg: DictConfig, overrides: Iterable[str], mode: RunMode) -> None:
    """What the app does to a composed config before it runs: the paper's smoke block (scale=smoke; a key given
    on the command line wins) and, for a single run, its own hand-run folder. Applying it twice changes nothing."""
    if "paper" not in cfg or "scale" not in cfg:
        return  # not this app's config (Hydra composes its own, e.g. for --help)
    task = [o for o in overrides if not o.startswith("hydra.")]  # Hydra's own settings never name a run
    apply_smoke(cfg, task)
    if mode == RunMode.RUN:
        name_hand_run(cfg, task)


class FinishingConfigLoader(ConfigLoaderImpl):
    """Hydra's config loader, finishing every config it composes; a config that does not compose is one line (exit 2)."""

    one_line_errors = True  # False for shell completion, which composes half-typed lines and expects Hydra's exception

    def load_configuration(self, config_name: str | None, overrides: list[str], run_mode: RunMode,
                           *args: Any, **kwargs: Any) -> DictConfig:
        try:
            cfg = super().load_configuration(config_name, overrides, run_mode, *args, **kwargs)
        except (HydraException, OmegaConfBaseException) as exc:
            if not self.one_line_errors:
                raise
            refuse(composition_error(exc, list(overrides)))  # Hydra's own report: 7-39 lines, exit 1
        # A --multirun job is composed with run_mode RUN; its hydra.mode (MULTIRUN) says what it is.
        finish_config(cfg, overrides, OmegaConf.select(cfg, "hydra.mode", default=None) or run_mode)
        return cfg


def install(one_line_errors: bool = True) -> None:
    """Make the app's Hydra (created after this call, in this process) compose with FinishingConfigLoader; the
    launchers then carry that loader into every job's process."""
    FinishingConfigLoader.one_line_errors = one_line_errors
    hydra_internal.ConfigLoaderImpl = FinishingConfigLoader  # what Hydra.create_main_hydra2 instantiates


def finish_job_config(cfg: DictConfig) -> None:
    """In the task function, in the job's process: finish the config once more, so that a launcher composing with
    a loader of its own still runs the same config, and its ``.hydra/config.yaml`` (saved before the task function
    runs) is rewritten to say so. After FinishingConfigLoader this changes nothing."""
    hydra_cfg = HydraConfig.get()
    before = OmegaConf.to_container(cfg)
    finish_config(cfg, list(hydra_cfg.overrides.task), hydra_cfg.mode)
    if OmegaConf.to_container(cfg) != before and hydra_cfg.output_subdir is not None:
        saved = Path(hydra_cfg.runtime.output_dir) / str(hydra_cfg.output_subdir) / "config.yaml"
        saved.write_text(OmegaConf.to_yaml(cfg))
