"""Entry point: ``python -m replications paper=pshgcn dataset=dblp [model=rgcn] [scale=smoke] [--multirun ...]``,
or the console script ``replications`` (pyproject.toml), the same Hydra app with Hydra's shell completion.

A hand run, never the committed protocol: it writes under outputs/results/<its overrides>/ (a folder per
setting, shared.destination.run_name; a --multirun job: its own multirun/ folder), or its
``paths.results_dir``, and says where; only ``make replicate-<paper>`` writes results/ (shared.destination).
The config ``--cfg job`` prints is the one that runs: the paper's ``smoke:`` block and the hand run's folder
are applied as the config is composed (``compose_hook``), once. A run that runs keeps its log beside its result
file (<model>.log, shared.runlog); a refused one leaves nothing.
"""

from __future__ import annotations

import functools
import sys
from typing import Any, NoReturn

import hydra
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.errors import HydraException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

import replications
from shared.cli_errors import INTERRUPTED, composition_error, interrupted, out_of_memory
from shared.config_check import check_added_keys, one_line, validate
from shared.data import DataError
from shared.destination import DestinationError, name_hand_run
from shared.paths import CONF_DIR
from shared.runlog import RunLog
from shared.runner import ConfigError, check_choices, partial_path, result_path, run, seeds_of
from shared.smoke import apply_smoke
from shared.writable import check_data_folders

# conf/config.yaml's hydra.output_subdir: .hydra/ for a --multirun job only; a single run's Hydra writes nothing.
OmegaConf.register_new_resolver("multirun_only", lambda mode, value: value if mode == RunMode.MULTIRUN else None,
                                replace=True)


def finish_config(cfg: DictConfig, overrides: list[str], mode: RunMode) -> None:
    """What the app does to a composed config before it runs: the paper's smoke block (scale=smoke; a key given
    on the command line wins) and, for a single run, its own hand-run folder."""
    if "paper" not in cfg or "scale" not in cfg:
        return
    apply_smoke(cfg, overrides)
    if mode == RunMode.RUN:
        name_hand_run(cfg, overrides)


def compose_hook(one_line_errors: bool = True) -> None:
    """Make every config this app composes (the run's, each --multirun job's, the one ``--cfg job`` prints)
    the one that runs, and a config that does not compose one line (exit 2). Hydra 1.3 has no hook after
    composition (1.4's ``on_compose_config`` callback), so its config loader is wrapped, in this process only
    (``python -m replications`` and the console script)."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    load = ConfigLoaderImpl.load_configuration
    if getattr(load, "finishes_config", False):
        return

    @functools.wraps(load)
    def load_configuration(self: Any, config_name: str | None, overrides: list[str], run_mode: RunMode,
                           *args: Any, **kwargs: Any) -> DictConfig:
        try:
            cfg = load(self, config_name, overrides, run_mode, *args, **kwargs)
        except (HydraException, OmegaConfBaseException) as exc:
            if not one_line_errors:  # shell completion composes half-typed lines and expects Hydra's exception
                raise
            refuse(composition_error(exc, list(overrides)))  # Hydra's own report: 7-39 lines, exit 1
        mode = OmegaConf.select(cfg, "hydra.mode", default=None) or run_mode  # a --multirun job is composed as RUN
        finish_config(cfg, [o for o in overrides if not o.startswith("hydra.")], mode)
        return cfg

    load_configuration.finishes_config = True  # type: ignore[attr-defined]
    ConfigLoaderImpl.load_configuration = load_configuration  # type: ignore[method-assign]


def refuse(exc: Exception | str) -> NoReturn:
    print(f"error: {exc if isinstance(exc, str) else one_line(exc)}", file=sys.stderr)
    sys.exit(2)


# An absolute path: "../conf" is read relative to this file under ``python -m`` but as a package (conf/ is none)
# when the console script imports this module.
@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> float | None:
    try:
        replication = replications.get(cfg.paper.name)
        check_choices(cfg)
        hydra_cfg = HydraConfig.get()
        overrides = list(hydra_cfg.overrides.task)
        check_added_keys(cfg, overrides)
        validate(cfg)
        check_data_folders()  # a missing mirror or an unwritable cache: before any work, as replicate does
        if hydra_cfg.mode != RunMode.MULTIRUN and cfg.paths.results_dir == hydra_cfg.runtime.output_dir:
            raise ConfigError("paths.results_dir is Hydra's job folder (a conf/sweep/ config), and a single run has none: "
                              "add --multirun (make sweep-<paper>), or give paths.results_dir=<folder>")
        if hydra_cfg.mode == RunMode.MULTIRUN and not cfg.paths.results_dir:
            cfg.paths.results_dir = hydra_cfg.runtime.output_dir  # one folder per job: jobs never overwrite each other
        path = result_path(cfg)  # refuses a folder inside results/
    except (ConfigError, DataError, DestinationError, KeyError) as exc:
        refuse(exc)
    stopped = ""
    with RunLog(path) as log:
        print(f"hand run: results go to {path.resolve()} (results/ is written only by make replicate-<paper>)")
        try:
            record = run(cfg, replication)
        except (ConfigError, DataError, DestinationError, KeyError) as exc:  # a corrupt or missing data file too
            refuse(exc)
        except (torch.OutOfMemoryError, MemoryError):
            refuse(out_of_memory(cfg, partial_path(cfg)))
        except KeyboardInterrupt:  # Ctrl-C: the seeds finished so far are in the partial record, which resumes
            stopped = interrupted(partial_path(cfg), len(seeds_of(cfg)))
            log.write(f"{stopped}\n")  # the log says so; the terminal gets it last, after the log's path
    if stopped:
        print(stopped, file=sys.stderr)
        sys.exit(INTERRUPTED)
    # The returned value is what an Optuna sweeper would optimise: the paper's selection metric.
    select = cfg.paper.get("select_metric")
    return record["aggregate"][select]["mean"] if select else None


def cli() -> None:
    """``python -m replications`` and the ``replications`` console script."""
    compose_hook(one_line_errors=not {"-sc", "--shell-completion"} & set(sys.argv[1:]))
    try:
        main()
    except KeyboardInterrupt:  # before the run started (composing, checking): main() handles it during the run
        print(interrupted(None, 0), file=sys.stderr)
        sys.exit(INTERRUPTED)


if __name__ == "__main__":
    cli()
