"""What an entry point prints, in one line, when a run cannot start or stops early (issue 38).

Hydra's own report of a composition error is 7-39 lines (the options one per line, its search path, a hint
about HYDRA_FULL_ERROR) with exit 1; ``composition_error`` turns it into one line that names the valid
choices (a paper's own datasets and models from conf/paper/<paper>.yaml, else the config group's options).
``interrupted`` and ``out_of_memory`` say what a stopped run kept and how to go on.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any

from hydra.errors import HydraException, MissingConfigException, OverrideParseException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError

from shared.config_check import one_line
from shared.paths import CONF_DIR

INTERRUPTED = 130  # the shell's status for a process stopped by SIGINT (128 + 2)


def chosen(overrides: list[str]) -> dict[str, str]:
    """key -> value of the plain ``key=value`` overrides (the last one wins, as in Hydra)."""
    return {o.split("=", 1)[0].lstrip("+~"): o.split("=", 1)[1] for o in overrides if "=" in o}


def paper_conf(paper: str | None) -> DictConfig | None:
    path = CONF_DIR / "paper" / f"{paper}.yaml"
    return OmegaConf.load(path) if paper and path.is_file() else None


def paper_models(conf: DictConfig, dataset: str | None) -> list[str]:
    """The ``model=`` choices a hand run of the paper accepts: its plan's configs, its own under <paper>/<dataset>."""
    planned = list((conf.get("replicate") or {}).get("models") or conf.models)
    own = f"{conf.name}/{dataset}" if dataset else f"{conf.name}/<dataset>"
    return [own if m == conf.name else m for m in planned]


def _missing_choice(exc: MissingConfigException, overrides: list[str]) -> str:
    group, _, name = (exc.missing_cfg_file or "").partition("/")
    given = chosen(overrides)
    conf = paper_conf(given.get("paper", "pshgcn"))  # conf/config.yaml's default paper
    datasets = ", ".join(conf.datasets) if conf is not None else ""
    if group == "model" and "/" in name and conf is not None:  # the paper's own model slot: model/<paper>/<dataset>
        paper, dataset = name.split("/", 1)
        if "dataset" not in given:  # every paper's default dataset is dblp (conf/config.yaml), pshgcn's
            return (f"paper '{paper}' needs dataset=<one of: {datasets}>, e.g. dataset={conf.datasets[0]} "
                    f"(make replicate-{paper} runs its whole protocol)")
        if dataset not in conf.datasets:
            return f"paper '{paper}' has no dataset '{dataset}'; valid: {datasets}"
        return (f"paper '{paper}' has no config of its own model for dataset '{dataset}'; "
                f"give model=<one of: {', '.join(paper_models(conf, dataset))}>")
    if group == "dataset" and conf is not None:
        return f"paper '{conf.name}' has no dataset '{name}'; valid: {datasets}"
    if group == "model" and conf is not None:
        return (f"paper '{conf.name}' has no model config '{name}'; valid: "
                f"{', '.join(paper_models(conf, given.get('dataset')))}")
    options = ", ".join(exc.options or []) or f"the files in conf/{group}/"
    return f"unknown {group or 'config'} '{name}'; valid: {options}"


def _unknown_key(cause: ConfigAttributeError | ConfigKeyError, overrides: list[str]) -> str:
    key = str(cause.full_key)
    value = chosen(overrides).get(key, "...")
    parent = cause.parent_node
    siblings = [str(k) for k in parent.keys() if k != "hydra"] if isinstance(parent, DictConfig) else []
    prefix = key.rpartition(".")[0]
    near = difflib.get_close_matches(str(cause.key), siblings, n=1, cutoff=0.6)
    hint = f"did you mean {f'{prefix}.' if prefix else ''}{near[0]}={value}? " if near else ""
    where = f"{prefix} has" if prefix else "the config has"
    return (f"unknown config key '{key}'; {hint}{where}: {', '.join(siblings)} (--cfg job shows them); "
            f"to add a new key write +{key}={value}")


def _bad_override(exc: OverrideParseException, overrides: list[str]) -> str:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    for override in overrides:
        try:
            parser.parse_override(override)
        except HydraException:  # what parse_override raises (parse_overrides wraps it in OverrideParseException)
            return (f"cannot read '{override}': arguments are key=value overrides (dataset=acm, scale=smoke, "
                    f"model.lr=0.01; a list: 'scale.seeds=[1,2]'); --help shows the usage")
    return f"cannot read the overrides: {one_line(exc)}"


def composition_error(exc: BaseException, overrides: list[str]) -> str:
    """A Hydra or OmegaConf composition error as one line naming what is wrong and the valid choices."""
    if isinstance(exc, MissingConfigException):
        return _missing_choice(exc, overrides)
    if isinstance(exc.__cause__, (ConfigAttributeError, ConfigKeyError)) and exc.__cause__.full_key:
        return _unknown_key(exc.__cause__, overrides)
    if isinstance(exc, OverrideParseException):
        return _bad_override(exc, overrides)
    text = one_line(exc).replace("Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.", "")
    return text.split("; Config search path:")[0].strip("; ")


def shown(path: Path) -> str:
    """A path as the user can type it: relative to the working directory when under it."""
    try:
        return os.path.relpath(path) if path.resolve().is_relative_to(Path.cwd().resolve()) else str(path)
    except (OSError, ValueError):
        return str(path)


def seed_span(seeds: list[int]) -> str:
    """1-3 for consecutive seeds, else 1, 4, 5."""
    if len(seeds) > 1 and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))


def plural(seeds: list[int]) -> str:
    return "seed" if len(seeds) == 1 else "seeds"


def kept_seeds(partial: Path) -> list[int]:
    """The seeds an interrupted run's partial record holds (none if it is absent or unreadable)."""
    try:
        return [int(r["seed"]) for r in json.loads(partial.read_text())["runs"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def interrupted(partial: Path | None, total: int, rerun: str = "rerun the same command to resume") -> str:
    """The one line a run stopped by Ctrl-C prints: which seeds its partial record keeps, and how to go on."""
    if partial is None:
        return "interrupted before any run started: nothing was written"
    seeds = kept_seeds(partial) if partial.exists() else []
    if not seeds:
        return f"interrupted before its first seed finished: no seed kept; {rerun.replace('resume', 'start again')}"
    return f"interrupted: {plural(seeds)} {seed_span(seeds)} of {total} kept in {shown(partial)}; {rerun}"


def batch_keys(cfg: DictConfig) -> list[tuple[str, int]]:
    """(path, value) of every batch size the config sets (model, protocol, scale, dataset)."""
    found: list[tuple[str, int]] = []

    def walk(node: Any, path: str) -> None:
        for key, child in node.items_ex(resolve=False) if isinstance(node, DictConfig) else []:
            if isinstance(child, DictConfig):
                walk(child, f"{path}.{key}")
            elif "batch" in str(key) and isinstance(child, int) and not isinstance(child, bool):
                found.append((f"{path}.{key}", child))

    for group in ("model", "paper", "scale", "dataset"):
        if isinstance(cfg.get(group), DictConfig):
            walk(cfg[group], group)
    return found


def out_of_memory(cfg: DictConfig, partial: Path) -> str:
    """The one line a run that exhausted memory prints: a smaller batch (named, with a value), and what it kept."""
    name = f"{cfg.paper.name}/{cfg.dataset.name}/{cfg.model.name}"
    batches = batch_keys(cfg)
    fix = (f"give a smaller batch, e.g. {batches[0][0]}={max(1, batches[0][1] // 2)} (now {batches[0][1]})"
           if batches else "give a smaller model or a device with more memory")
    seeds = kept_seeds(partial) if partial.exists() else []
    kept = f"; {plural(seeds)} {seed_span(seeds)} kept in {shown(partial)} and resume" if seeds else ""
    return f"out of memory running {name} on device={cfg.get('device', 'cpu')}: {fix}, or scale=smoke{kept}"
