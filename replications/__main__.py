"""Entry point: ``python -m replications paper=pshgcn dataset=dblp [model=rgcn] [scale=smoke] [--multirun ...]``."""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

import replications
from shared.runner import ConfigError, run


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> float | None:
    try:
        record = run(cfg, replications.get(cfg.paper.name))
    except (ConfigError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    # The returned value is what an Optuna sweeper would optimise: the paper's selection metric.
    select = cfg.paper.get("select_metric")
    return record["aggregate"][select]["mean"] if select else None


if __name__ == "__main__":
    main()
