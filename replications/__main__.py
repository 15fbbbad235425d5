"""Entry point: ``python -m replications paper=pshgcn dataset=dblp [model=rgcn] [scale=smoke] [--multirun ...]``,
or the console script ``replications`` (pyproject.toml), the same Hydra app with Hydra's shell completion.

A hand run, never the committed protocol: it writes under outputs/results/<its overrides>/ (a folder per
setting, shared.destination.run_name; a --multirun job: its own multirun/ folder), or its
``paths.results_dir``, and says where; only ``make replicate-<paper>`` writes results/ (shared.destination).
The config ``--cfg job`` prints is the one that runs, under every launcher: the paper's ``smoke:`` block and
the hand run's folder are applied wherever the config is composed, in a joblib worker or a submitit job too
(shared.compose), and the task function checks it in the job's own process. A run that runs keeps its log beside
its result file (<model>.log, shared.runlog); a refused one leaves nothing.
"""

from __future__ import annotations

import sys

import hydra
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

import replications
from shared.cli_errors import INTERRUPTED, interrupted, out_of_memory
from shared.compose import finish_job_config, install, refuse
from shared.config_check import check_added_keys, validate
from shared.data import DataError
from shared.destination import DestinationError
from shared.paths import CONF_DIR
from shared.runlog import RunLog
from shared.runner import ConfigError, check_choices, partial_path, result_path, run, seeds_of
from shared.writable import check_data_folders


# An absolute path: "../conf" is read relative to this file under ``python -m`` but as a package (conf/ is none)
# when the console script imports this module.
@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> float | None:
    try:
        finish_job_config(cfg)  # in the job's own process: the same config under every launcher (shared.compose)
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
    install(one_line_errors=not {"-sc", "--shell-completion"} & set(sys.argv[1:]))
    try:
        main()
    except KeyboardInterrupt:  # before the run started (composing, checking): main() handles it during the run
        print(interrupted(None, 0), file=sys.stderr)
        sys.exit(INTERRUPTED)


if __name__ == "__main__":
    cli()
