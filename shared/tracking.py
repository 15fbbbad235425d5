"""Experiment trackers: ``none`` or ``wandb`` (offline unless WANDB_API_KEY is set).

One W&B run per seed, grouped by paper/dataset. Every name a run gets follows one scheme, applied here
(``metric_name``), whatever the paper's train()/evaluate() call its numbers:

- ``train/<m>``: per-step (per-epoch) training numbers; ``val/<m>``: validation; ``test/<m>``: test and other
  final measurements (latency, parameters); ``reported/<split>/<m>``: the paper's number for ``<split>/<m>``.
- raw names map by prefix: ``val_``/``valid_`` -> ``val/``, ``test_`` -> ``test/``, ``train_`` -> ``train/``;
  an unprefixed per-step name -> ``train/`` (``loss`` -> ``train/loss``); an unprefixed final name -> ``test/``
  unless it is a loss (``first_loss`` -> ``train/first_loss``). Already-scheme names (``val/map``) are kept.
- units: as the paper reports them (the record's units; GAGA's AUC/AP/F1 in percent, per epoch too).

At the end of the protocol the runner hands over the written record (``finish_protocol``): the last seed's
run then gets, per metric ``<split>/<m>``, the cross-seed ``<split>/<m>/mean``, ``/std``, ``/n``, the
comparison's ``/status``, ``/reference_kind`` and ``/difference``, the tag ``aggregate`` and the result JSON
as an artifact (type ``result``). Tags on every run: ``paper:…``, ``dataset:…``, ``model:…``, ``scale:…``,
``commit:<short sha>`` (``dirty`` when the tree differed). conf/wandb/ holds the dashboard and sweep built on
these names (shared.wandb_dashboard).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from shared.config_check import OFFLINE_FIX, ConfigError, check_tracker, wandb_mode
from shared.progress import write

INIT_TIMEOUT = 20.0  # seconds an online wandb.init waits for the server (wandb's default: 90, then retries)

SPLITS = ("train", "val", "test")
SECTIONS = (*SPLITS, "reported")
PREFIXES = (("valid_", "val"), ("val_", "val"), ("test_", "test"), ("train_", "train"))
ALIASES = {"valid": "val", "validation": "val", "eval": "val"}  # a paper's own "valid/x" section
LOSS_LIKE = re.compile(r"(^|_)(loss|nll)(_|$)")
# What a scheme name looks like: a section, then the metric (may hold further '/' parts).
SCHEME = re.compile(r"^(train|val|test|reported)/[A-Za-z0-9][A-Za-z0-9_./@-]*$")


def metric_name(raw: str, final: bool = False) -> str:
    """The scheme name of a paper's raw metric name. ``final``: an evaluate() number (default section test),
    else a per-step log (default section train)."""
    if "/" in raw:
        head, rest = raw.split("/", 1)
        head = ALIASES.get(head, head)
        if head in SECTIONS:
            return f"{head}/{rest}"
        raw = raw.replace("/", "_")
    for prefix, split in PREFIXES:
        if raw.startswith(prefix) and len(raw) > len(prefix):
            return f"{split}/{raw[len(prefix):]}"
    return f"{'test' if final and not LOSS_LIKE.search(raw) else 'train'}/{raw}"


def reported_name(raw: str) -> str:
    """``reported/<split>/<m>``: the paper's value for the reproduced ``<split>/<m>`` (test_auc -> reported/test/auc)."""
    return f"reported/{metric_name(raw, final=True)}"


class Names:
    """Raw -> scheme names for one run; two raw names that would share a scheme name (train_tokens_per_s and
    tokens_per_s) stay apart: the later one keeps its raw name after the section (train/tokens_per_s)."""

    def __init__(self) -> None:
        self.raw_to_name: dict[str, str] = {}
        self.name_to_raw: dict[str, str] = {}

    def __call__(self, raw: str, final: bool = False) -> str:
        key = f"{final}:{raw}"
        if key not in self.raw_to_name:
            name = metric_name(raw, final)
            section = name.split("/", 1)[0]
            for candidate in (f"{section}/{raw.replace('/', '_')}", f"{section}/raw_{raw.replace('/', '_')}"):
                if self.name_to_raw.get(name, raw) == raw:
                    break
                name = candidate
            self.raw_to_name[key], self.name_to_raw[name] = name, raw
        return self.raw_to_name[key]

    def rename(self, metrics: dict[str, Any], final: bool = False) -> dict[str, Any]:
        return {self(k, final): v for k, v in metrics.items()}


def run_tags(cfg: DictConfig, git: dict | None) -> list[str]:
    """paper, dataset, model, scale and the short commit, as ``key:value`` (W&B's limit: 64 characters a tag)."""
    tags = [f"{key}:{OmegaConf.select(cfg, f'{key}.name')}" for key in ("paper", "dataset", "model", "scale")
            if OmegaConf.select(cfg, f"{key}.name") is not None]
    if git and git.get("git_commit"):
        tags.append(f"commit:{git['git_commit'][:7]}")
        if git.get("git_dirty"):
            tags.append("dirty")
    return [t[:64] for t in tags]


def protocol_summary(record: dict[str, Any], names: Names | None = None) -> dict[str, Any]:
    """The cross-seed entries of a written record: per metric mean, std, n, and the comparison's status,
    reference kind and difference; the reported value as ``reported/<split>/<m>``."""
    names = names or Names()
    out: dict[str, Any] = {}
    for raw, agg in record.get("aggregate", {}).items():
        name = names(raw, final=True)
        out.update({f"{name}/mean": agg.get("mean"), f"{name}/std": agg.get("std"), f"{name}/n": agg.get("n")})
    for row in record.get("comparison", []):
        name = names(row["metric"], final=True)
        out[f"{name}/status"] = row.get("status")
        if row.get("reference_kind") is not None:
            out[f"{name}/reference_kind"] = row["reference_kind"]
        if row.get("difference") is not None:
            out[f"{name}/difference"] = row["difference"]
        if row.get("reported") is not None:
            out[f"reported/{name}"] = row["reported"]
    return out


class Tracker:
    def start(self, cfg: DictConfig, seed: int) -> None: ...
    def log(self, metrics: dict[str, float], step: int) -> None: ...
    def finish(self, final: dict[str, float], reported: dict[str, float]) -> None: ...
    def finish_protocol(self, record: dict[str, Any], path: Path | None = None) -> None:
        """After the result file is written: cross-seed aggregate, statuses, artifact."""

    def abort(self) -> None:
        """The run stopped before its result file (Ctrl-C, an error): close what is open, quietly."""


class NoTracker(Tracker):
    pass


class WandbTracker(Tracker):
    def __init__(self, project: str, mode: str | None, entity: str | None = None, git: dict | None = None) -> None:
        self.project, self.entity, self.git = project, entity, git
        # No account needed: offline unless a key is present or the user chose a mode.
        self.mode = wandb_mode(mode)[0]
        self.run: Any = None
        self.names = Names()
        # Offline, wandb's banner and run summary around every seed would split the progress bar and say nothing a
        # user acts on: silent, and one line at the end of the run (offline_note) says where the runs are.
        self.quiet = self.mode in ("offline", "dryrun", "disabled")
        self.run_dirs: list[Path] = []  # this run's offline run folders, for that line

    def _init(self, cfg: DictConfig, name: str, config: dict[str, Any], tags: list[str]) -> None:
        import wandb

        try:
            self.run = wandb.init(
                project=self.project,
                entity=self.entity,
                mode=self.mode,
                group=f"{cfg.paper.name}/{cfg.dataset.name}",
                job_type=cfg.model.name,
                name=name,
                config=config,
                tags=tags,
                reinit="finish_previous",
                settings=wandb.Settings(init_timeout=INIT_TIMEOUT,  # no network: fail in seconds, not minutes
                                        **({"silent": True, "console": "off"} if self.quiet else {})),
            )
        except (wandb.Error, TimeoutError, ConnectionError) as exc:
            first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
            raise ConfigError(f"W&B mode {self.mode} could not start a run ({first}): online needs network and a valid "
                              f"key; {OFFLINE_FIX}") from exc
        self.names = Names()
        if self.mode == "offline" and getattr(self.run, "settings", None) is not None and self.run.settings.sync_dir:
            self.run_dirs.append(Path(self.run.settings.sync_dir))

    def abort(self) -> None:
        if self.run is not None:
            try:
                self.run.finish(exit_code=130)
            except Exception:  # noqa: BLE001 - closing a run must never hide the interruption itself
                pass
            self.run = None

    def offline_note(self) -> str | None:
        """The one line an offline run ends with: where its W&B runs went, and how to upload them."""
        if not self.run_dirs:
            return None
        folder = self.run_dirs[-1].parent
        return (f"W&B offline: {len(self.run_dirs)} run(s) saved under {folder} ({self.run_dirs[-1].name}, ...); "
                f"upload them with: wandb sync {folder}/offline-run-*  (or log in and set WANDB_MODE=online)")

    def start(self, cfg: DictConfig, seed: int) -> None:
        self._init(cfg, f"{cfg.paper.name}-{cfg.dataset.name}-{cfg.model.name}-seed{seed}",
                   {**OmegaConf.to_container(cfg, resolve=True), "seed": seed}, [*run_tags(cfg, self.git), "seed"])

    def log(self, metrics: dict[str, float], step: int) -> None:
        self.run.log(self.names.rename(metrics), step=step)

    def finish(self, final: dict[str, float], reported: dict[str, float]) -> None:
        # wandb holds the last step's row until the next step or finish, and that row then overwrites the summary
        # (a per-epoch val/auc or test/f1 would replace the final one): commit it first.
        self.run.log({}, commit=True)
        self.run.summary.update(self.names.rename(final, final=True))
        self.run.summary.update({reported_name(k): v for k, v in reported.items()})
        # The run stays open: finish_protocol adds the cross-seed entries to the last seed's run; the next
        # seed's start (reinit="finish_previous") closes it, and so does wandb at exit.

    def finish_protocol(self, record: dict[str, Any], path: Path | None = None) -> None:
        import wandb

        if self.run is None:  # every seed resumed from an earlier process: a run of its own for the aggregate
            cfg = OmegaConf.create(record.get("config") or {})
            for key in ("paper", "dataset", "model", "scale"):
                if OmegaConf.select(cfg, f"{key}.name") is None:
                    OmegaConf.update(cfg, f"{key}.name", record[key], force_add=True)
            self._init(cfg, f"{record['paper']}-{record['dataset']}-{record['model']}-aggregate",
                       OmegaConf.to_container(cfg, resolve=True), run_tags(cfg, self.git))
        self.run.summary.update(protocol_summary(record, self.names))
        self.run.tags = (*self.run.tags, "aggregate")
        if path is not None and Path(path).is_file():
            artifact = wandb.Artifact(
                re.sub(r"[^A-Za-z0-9_.-]", "-", f"result-{record['paper']}-{record['dataset']}-{record['model']}"),
                type="result",
                metadata={k: record.get(k) for k in ("paper", "dataset", "model", "scale", "complete")},
            )
            artifact.add_file(str(path), name=Path(path).name)
            self.run.log_artifact(artifact)
        self.run.finish()
        self.run = None
        note = self.offline_note()
        if note:
            write(note)  # above the progress bar, not through it
        self.run_dirs = []


def make_tracker(cfg: DictConfig, git: dict | None = None) -> Tracker:
    """``git``: the runner's git_state() (commit tag); None: no commit tag."""
    check_tracker(cfg)
    if cfg.tracker.name == "none":
        return NoTracker()
    return WandbTracker(cfg.tracker.project, cfg.tracker.get("mode"), cfg.tracker.get("entity"), git)
