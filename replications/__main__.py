"""Entry point: ``python -m replications paper=pshgcn dataset=dblp [model=rgcn] [scale=smoke] [--multirun ...]``.

A hand run, never the committed protocol: it writes under outputs/results/ (a --multirun job: its own
multirun/ folder), or its ``paths.results_dir``, and says where; only ``make replicate-<paper>`` writes results/
(shared.destination).
"""

from __future__ import annotations

import sys

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

import replications
from shared.config_check import check_added_keys, one_line, validate
from shared.data import DataError
from shared.destination import DestinationError
from shared.runner import ConfigError, check_choices, result_path, run
from shared.smoke import apply_smoke
from shared.writable import check_data_folders

# conf/config.yaml's hydra.output_subdir: .hydra/ for a --multirun job only; a single run's Hydra writes nothing.
OmegaConf.register_new_resolver("multirun_only", lambda mode, value: value if mode == RunMode.MULTIRUN else None,
                                replace=True)


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> float | None:
    try:
        replication = replications.get(cfg.paper.name)
        check_choices(cfg)
        hydra_cfg = HydraConfig.get()
        check_added_keys(cfg, list(hydra_cfg.overrides.task))
        apply_smoke(cfg, hydra_cfg.overrides.task)
        validate(cfg)
        check_data_folders()  # a missing mirror or an unwritable cache: before any work, as replicate does
        if hydra_cfg.mode != RunMode.MULTIRUN and cfg.paths.results_dir == hydra_cfg.runtime.output_dir:
            raise ConfigError("paths.results_dir is Hydra's job folder (a conf/sweep/ config), and a single run has none: "
                              "add --multirun (make sweep-<paper>), or give paths.results_dir=<folder>")
        if hydra_cfg.mode == RunMode.MULTIRUN and not cfg.paths.results_dir:
            cfg.paths.results_dir = hydra_cfg.runtime.output_dir  # one folder per job: jobs never overwrite each other
        print(f"hand run: results go to {result_path(cfg).resolve()} (results/ is written only by make replicate-<paper>)")
        record = run(cfg, replication)
    except (ConfigError, DataError, DestinationError, KeyError) as exc:  # a corrupt or missing data file too
        print(f"error: {one_line(exc)}", file=sys.stderr)
        sys.exit(2)
    # The returned value is what an Optuna sweeper would optimise: the paper's selection metric.
    select = cfg.paper.get("select_metric")
    return record["aggregate"][select]["mean"] if select else None


if __name__ == "__main__":
    main()
