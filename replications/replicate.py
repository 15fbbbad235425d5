"""``python -m replications.replicate <paper> [overrides...]``: the paper's whole protocol, then the report.

Runs every (dataset, model) pair listed under ``replicate`` in conf/paper/<paper>.yaml, each over the
protocol's seeds, writing results/<paper>/<dataset>/<model>.json; then regenerates the results pages.
Extra Hydra overrides (e.g. ``dataset=acm``, ``scale=smoke``, ``tracker=none``) narrow or shrink it.
"""

from __future__ import annotations

import sys

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import replications
from shared import report
from shared.data import DataError
from shared.runner import PROJECT_ROOT, ConfigError, run


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(f"usage: python -m replications.replicate <paper> [overrides]; papers: {', '.join(replications.available())}")
        return 2
    paper, overrides = argv[0], argv[1:]
    try:
        replication = replications.get(paper)
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2
    chosen = {o.split("=", 1)[0]: o.split("=", 1)[1] for o in overrides if "=" in o}
    rest = [o for o in overrides if o.split("=", 1)[0] not in ("dataset", "model")]
    with initialize_config_dir(config_dir=str(PROJECT_ROOT / "conf"), version_base="1.3"):
        # Read the plan from the paper file itself: composing with only `paper=` would pull the default
        # dataset (dblp) and fail for every paper that has no model config for it.
        plan = OmegaConf.load(PROJECT_ROOT / "conf" / "paper" / f"{paper}.yaml").replicate
        datasets = chosen["dataset"].split(",") if "dataset" in chosen else list(plan.datasets)
        models = chosen["model"].split(",") if "model" in chosen else list(plan.models)
        cfg = None
        for dataset in datasets:
            for model in models:
                model_choice = f"{paper}/{dataset}" if model == paper else model
                try:
                    cfg = compose("config", overrides=[f"paper={paper}", f"dataset={dataset}",
                                                       f"model={model_choice}", *rest])
                    print(f"=== {paper} / {dataset} / {model} ===\n{OmegaConf.to_yaml(cfg.model)}")
                    run(cfg, replication)
                except (ConfigError, DataError) as exc:
                    print(f"error: {exc}", file=sys.stderr)
                    return 2
    finish = getattr(replication, "after_replicate", None)  # optional per-paper summary (table, plots)
    if callable(finish) and cfg is not None:
        finish(cfg)
    report.main([])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
