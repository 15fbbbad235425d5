"""``python -m replications.replicate <paper> [overrides...]``: the paper's whole protocol, then the report.

Runs every (dataset, model) pair listed under ``replicate`` in conf/paper/<paper>.yaml, each over the
protocol's seeds, writing results/<paper>/<dataset>/<model>.json; then regenerates the results pages.
``dataset=`` and ``model=`` narrow it and ``tracker=``/``device=`` say how it runs: it is still the protocol.
Any other override (``scale=smoke``, ``seed=1``, ``model.lr=...``) changes the committed config, so that
run writes under outputs/results/<its overrides>/ (as ``python -m replications`` with the same overrides;
scale=smoke: outputs/smoke-results/), or its results_dir, and leaves results/ as committed.
The console script ``replicate`` (pyproject.toml) is this module.
"""

from __future__ import annotations

import sys
from contextlib import nullcontext
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

import replications
from replications import report as report_all
from shared import report
from shared.config_check import check_added_keys, one_line, validate
from shared.data import DataError
from shared.destination import DestinationError, name_hand_run, protocol, results_root
from shared.paths import REPO_ROOT
from shared.progress import Protocol, write
from shared.runner import ConfigError, check_choices, run, seeds_of
from shared.smoke import apply_smoke
from shared.writable import check_data_folders, ensure_writable

NARROWING = ("dataset", "model")
RUN_ONLY = ("tracker", "device")  # where and how a run executes, not what it computes


def config_changes(overrides: list[str]) -> list[str]:
    """The overrides that change the committed config: any of them makes the run not the protocol."""
    return [o for o in overrides if o.split("=", 1)[0] not in (*NARROWING, *RUN_ONLY)]


def plan_configs(paper: str, overrides: list[str]) -> list[tuple[str, str, DictConfig]]:
    """Every (dataset, model, config) to run, all composed and checked before anything runs."""
    paper_conf = OmegaConf.load(REPO_ROOT / "conf" / "paper" / f"{paper}.yaml")
    # Read the plan from the paper file itself: composing with only `paper=` would pull the default
    # dataset (dblp) and fail for every paper that has no model config for it.
    plan = paper_conf.replicate
    chosen = {o.split("=", 1)[0]: o.split("=", 1)[1] for o in overrides if "=" in o}
    datasets = chosen["dataset"].split(",") if "dataset" in chosen else list(plan.datasets)
    # models_for: a dataset whose protocol runs fewer arms (flexmoe's Tiny Shakespeare: the E = 8 ones only)
    per_dataset = plan.get("models_for") or {}
    for dataset in datasets:
        if dataset not in paper_conf.datasets:
            raise ConfigError(f"dataset '{dataset}' is not a {paper} dataset; "
                              f"valid: {', '.join(paper_conf.datasets)}")
    rest = [o for o in overrides if o.split("=", 1)[0] not in NARROWING]
    configs = []
    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        for dataset in datasets:
            models = chosen["model"].split(",") if "model" in chosen else list(per_dataset.get(dataset, plan.models))
            for model in models:
                choice = model_choice(paper, list(plan.models), model, dataset)
                cfg = compose("config", overrides=[f"paper={paper}", f"dataset={dataset}", f"model={choice}", *rest])
                check_choices(cfg)
                check_added_keys(cfg, rest)
                apply_smoke(cfg, overrides)
                validate(cfg)
                if config_changes(overrides):  # a hand run's own folder (the protocol's config stays as committed)
                    name_hand_run(cfg, overrides)
                configs.append((dataset, model, cfg))
    return configs


def model_choice(paper: str, planned: list[str], model: str, dataset: str) -> str:
    """The config choice for `model`: a config name (gaga_mlp), the name results and pages use (mlp), or the
    paper's own name; one model, one name on the page, accepted on the command line."""
    slot = f"{paper}/{dataset}"  # the paper's own model: its result name may differ (flexmoe runs switch_e8)
    configs = [slot if c == paper else c for c in planned]
    by_name = {str(OmegaConf.load(REPO_ROOT / "conf" / "model" / f"{c}.yaml").name): c
               for c in configs if (REPO_ROOT / "conf" / "model" / f"{c}.yaml").exists()}
    choice = slot if model == paper else by_name.get(model, model)
    if not (REPO_ROOT / "conf" / "model" / f"{choice}.yaml").exists():
        accepted = sorted({paper, *by_name, *planned})
        raise ConfigError(f"paper '{paper}' has no model '{model}' for dataset '{dataset}'; "
                          f"accepted names: {', '.join(accepted)}")
    return choice


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
    changes = config_changes(overrides)
    try:
        configs = plan_configs(paper, overrides)
        with nullcontext() if changes else protocol():
            roots = {str(results_root(cfg)) for _, _, cfg in configs}  # refuses results/ before anything runs
            for root in roots:
                ensure_writable(Path(root))  # an unwritable folder fails now, not after the first model trains
        check_data_folders()  # a missing mirror or an unwritable cache too
    except (ConfigError, DataError, DestinationError, HydraException, OmegaConfBaseException) as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    if changes:
        print(f"not the paper's protocol ({' '.join(changes)} changes the committed config): "
              f"results go to {', '.join(sorted(roots))}; results/ stays as committed")
    # One bar over every (dataset, model, seed) of the plan, with an ETA from the seeds measured so far
    with nullcontext() if changes else protocol(), Protocol(sum(len(seeds_of(cfg)) for _, _, cfg in configs)) as bar:
        for dataset, model, cfg in configs:
            write(f"=== {paper} / {dataset} / {model} ===\n{OmegaConf.to_yaml(cfg.model)}")
            try:
                run(cfg, replication, bar)
            except (ConfigError, DataError, DestinationError) as exc:
                write(f"error: {one_line(exc)}", file=sys.stderr)
                return 2
    if changes:  # the paper's own page beside the runs it was built from (the committed pages stay as they are)
        for root in sorted(roots):
            report.write_paper_pages(Path(root), {paper: replication.report})
    else:
        report_all.main([])  # every page is built from results/: only the protocol changes it
    return 0


def cli() -> int:
    """The ``replicate`` console script: ``replicate <paper> [overrides]``."""
    return main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(cli())
