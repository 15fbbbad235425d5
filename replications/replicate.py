"""``python -m replications.replicate <paper> [overrides...]``: the paper's whole protocol, then the report.

Runs every (dataset, model) pair listed under ``replicate`` in conf/paper/<paper>.yaml, each over the
protocol's seeds, writing results/<paper>/<dataset>/<model>.json; then regenerates the results pages.
``dataset=`` and ``model=`` narrow it and ``tracker=``/``device=`` say how it runs: it is still the protocol.
Any other override (``scale=smoke``, ``seed=1``, ``model.lr=...``) changes the committed config, so that
run writes under outputs/results/<its overrides>/ (as ``python -m replications`` with the same overrides;
scale=smoke: outputs/smoke-results/), or its results_dir, and leaves results/ as committed.
``launcher=slurm`` (``slurm_gpu``, ``local``; make's LAUNCHER=) plans and checks the same configs, then submits their
seeds as job arrays instead and prints the merge command (replications.cluster).
The console script ``replicate`` (pyproject.toml) is this module.
"""

from __future__ import annotations

import sys
from contextlib import nullcontext
from pathlib import Path

import torch
from hydra import compose, initialize_config_dir
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

import replications
from replications import cluster
from replications import report as report_all
from shared import report
from shared.cli_errors import INTERRUPTED, composition_error, interrupted, out_of_memory, paper_conf, seed_span
from shared.config_check import check_added_keys, one_line, validate
from shared.data import DataError
from shared.destination import DestinationError, name_hand_run, protocol, results_root
from shared.paths import REPO_ROOT
from shared.progress import Protocol, write
from shared.runner import ConfigError, check_choices, format_rows, partial_path, run, seeds_of
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


USAGE = """usage: replicate <paper> [key=value ...] [--cfg job]
       make replicate-<paper> [key=value ...] [ARGS="--cfg job"]     (python -m replications.replicate: the same)
Runs every (dataset, model) of the paper's protocol (conf/paper/<paper>.yaml replicate:) over its seeds, writes
results/<paper>/<dataset>/<model>.json, rebuilds the pages and ends with each run's verdict.
  dataset=acm  model=rgcn   narrow it (a comma list runs several); still the protocol, results/ is written
  tracker=none device=cuda  how it runs (tracker=none: no W&B run); still the protocol
  scale=smoke               a pipeline check in seconds: writes outputs/smoke-results/, never results/
  seed=1  model.lr=0.01     any other key=value changes the config: a hand run under outputs/results/<overrides>/
  launcher=slurm            (make: LAUNCHER=slurm) submit the seeds as SLURM job arrays instead (slurm_gpu; local:
                            submitit's local executor); hydra.launcher.partition=p ...; prints the merge command
  --cfg job                 print each config that would run, then stop
Interrupted (Ctrl-C), the same command resumes from the seeds already finished.
e.g. make replicate-pshgcn dataset=imdb model=pshgcn tracker=none
papers: {papers}"""


def usage(paper: str | None = None) -> str:
    """The usage text; for a known paper, its datasets and models too."""
    text = USAGE.format(papers=", ".join(replications.available()))
    conf = paper_conf(paper) if paper in replications.available() else None
    if conf is not None:
        text += f"\n{paper}: datasets {', '.join(conf.datasets)}; models {', '.join(conf.models)}"
    return text


def describe(paper: str, dataset: str, model: str, cfg: DictConfig) -> str:
    """The one line naming a run before it starts (its whole config: --cfg job)."""
    seeds = seeds_of(cfg)
    return (f"=== {paper} / {dataset} / {model}: scale={cfg.scale.name}, seeds {seed_span(seeds)} ({len(seeds)}), "
            f"tracker={cfg.tracker.get('name', 'none')}, device={cfg.device} ===")


def main(argv: list[str]) -> int:
    flags = [a for a in argv if a.startswith("-")]
    words = [a for a in argv if not a.startswith("-")]
    show_cfg = "--cfg" in flags
    if show_cfg:  # --cfg job (Hydra's flag, as python -m replications takes it): its value is not an override
        at = argv.index("--cfg")
        if argv[at + 1:at + 2] != ["job"]:
            print("error: --cfg takes 'job' (--cfg job prints each config that would run)", file=sys.stderr)
            return 2
        words.remove("job")
    if "--help" in flags or "-h" in flags:
        print(usage(words[0] if words else None))
        return 0
    unknown = [f for f in flags if f != "--cfg"]
    if unknown:
        print(f"error: unknown option '{unknown[0]}'; replicate takes <paper> [key=value ...] [--cfg job]; "
              f"--help shows the usage", file=sys.stderr)
        return 2
    if not words:
        print(f"error: name a paper: replicate <paper> [key=value ...]; papers: {', '.join(replications.available())}; "
              f"--help shows the usage", file=sys.stderr)
        return 2
    try:
        return replicate(words[0], words[1:], show_cfg)
    except KeyboardInterrupt:  # while composing or checking: replicate() handles it once runs start
        print(interrupted(None, 0), file=sys.stderr)
        return INTERRUPTED


def replicate(paper: str, overrides: list[str], show_cfg: bool = False) -> int:
    try:
        replication = replications.get(paper)
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2
    try:
        launcher, overrides, launch_overrides = cluster.split_launcher(overrides)
    except ConfigError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    changes = config_changes(overrides)
    try:
        configs = plan_configs(paper, overrides)
        with nullcontext() if changes else protocol():
            roots = {str(results_root(cfg)) for _, _, cfg in configs}  # refuses results/ before anything runs
            if show_cfg:
                for dataset, model, cfg in configs:
                    print(f"# {paper} / {dataset} / {model}\n{OmegaConf.to_yaml(cfg)}")
                return 0
            for root in roots:
                ensure_writable(Path(root))  # an unwritable folder fails now, not after the first model trains
        check_data_folders()  # a missing mirror or an unwritable cache too
        if launcher:  # the same configs, one job per seed; results/ is written only by the merge
            threads = [o for o in overrides if o.split("=", 1)[0] == "threads"]  # the preset's cores follow it
            cluster.submit(paper, configs, launcher, [*launch_overrides, *threads], Path(min(roots)),
                           measured=not changes)
            return 0
    except (HydraException, OmegaConfBaseException) as exc:  # Hydra's own report would be 7-39 lines
        print(f"error: {composition_error(exc, overrides)}", file=sys.stderr)
        return 2
    except (ConfigError, DataError, DestinationError) as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    if changes:
        print(f"not the paper's protocol ({' '.join(changes)} changes the committed config): "
              f"results go to {', '.join(sorted(roots))}; results/ stays as committed")
    records, stopped = [], ""
    # One bar over every (dataset, model, seed) of the plan, with an ETA from the seeds measured so far
    with nullcontext() if changes else protocol(), Protocol(sum(len(seeds_of(cfg)) for _, _, cfg in configs)) as bar:
        for dataset, model, cfg in configs:
            write(describe(paper, dataset, model, cfg))  # one line, not the config (--cfg job prints that)
            try:
                records.append(run(cfg, replication, bar))
            except (ConfigError, DataError, DestinationError) as exc:
                write(f"error: {one_line(exc)}", file=sys.stderr)
                return 2
            except (torch.OutOfMemoryError, MemoryError):
                write(f"error: {out_of_memory(cfg, partial_path(cfg))}", file=sys.stderr)
                return 2
            except KeyboardInterrupt:  # Ctrl-C: the partial record keeps the finished seeds; the same command resumes
                written = f" ({len(records)} earlier run(s) finished and written)" if records else ""
                stopped = interrupted(partial_path(cfg), len(seeds_of(cfg))) + written
                break
    if stopped:  # printed once the bar is closed, so it is the last line
        print(stopped, file=sys.stderr)
        return INTERRUPTED
    try:
        if changes:  # the paper's own page beside the runs it was built from (the committed pages stay as they are)
            for root in sorted(roots):
                report.write_paper_pages(Path(root), {paper: replication.report})
        else:
            report_all.main([])  # every page is built from results/: only the protocol changes it
    except KeyboardInterrupt:
        print("interrupted while writing the pages: every result is written; make report rebuilds the pages",
              file=sys.stderr)
        return INTERRUPTED
    # The terminal ends with what was asked for: each run's verdict, after whatever the pages printed
    for record in records:
        if record.get("aggregate"):
            write(format_rows(record))
    return 0


def cli() -> int:
    """The ``replicate`` console script: ``replicate <paper> [overrides]``."""
    return main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(cli())
