"""Experiment trackers: ``none`` or ``wandb`` (offline unless WANDB_API_KEY is set).

One W&B run per seed, grouped by paper/dataset, with the reported numbers logged beside the
reproduced ones (``reported/<metric>`` vs ``test/<metric>``) so a dashboard can chart both.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from omegaconf import DictConfig, OmegaConf

from shared.config_check import ConfigError

MODES = ("offline", "online", "disabled", "dryrun", "run", "shared")  # what wandb.Settings(mode=) accepts
ONLINE = ("online", "run", "shared")  # modes that talk to the server: they need a key and network
INIT_TIMEOUT = 20.0  # seconds an online wandb.init waits for the server (wandb's default: 90, then retries)
OFFLINE_FIX = "or run offline (unset WANDB_MODE and WANDB_API_KEY; `wandb sync` later) or with tracker=none"
JWT = re.compile(r"[\w-]+\.[\w-]+\.[\w-]+")


def wandb_mode(mode: str | None) -> tuple[str, str]:
    """(mode, where it came from): the tracker config's mode, else WANDB_MODE, else online with a key, else offline."""
    if mode:
        return str(mode), "tracker.mode"
    if os.environ.get("WANDB_MODE"):
        return os.environ["WANDB_MODE"], "WANDB_MODE"
    return ("online", "WANDB_API_KEY is set, so the W&B mode") if os.environ.get("WANDB_API_KEY") else ("offline", "")


def key_problem(key: str) -> str | None:
    """What is wrong with a W&B API key's form, or None (wandb's own rule: 40+ letters, digits, underscores after
    an optional on-prem '<prefix>-', or a JWT). The key itself is never printed."""
    if JWT.fullmatch(key):
        return None
    secret = key.split("-", 1)[-1]
    if not re.fullmatch(r"[\w-]+", secret):
        return "it may hold only letters, digits and underscores (a space or quote pasted with it?)"
    if len(secret) < 40:
        return f"it has {len(secret)} characters, a W&B key has 40 or more"
    return None


def has_login() -> bool:
    """A key saved by `wandb login` (in ~/.netrc, or $NETRC, for the W&B host)."""
    import netrc

    host = urlparse(os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai").hostname
    path = Path(os.environ.get("NETRC") or Path.home() / ".netrc")
    try:
        return path.is_file() and netrc.netrc(path).authenticators(host) is not None
    except (OSError, netrc.NetrcParseError):
        return False


def check_tracker(cfg: DictConfig) -> None:
    """Refuse a tracker that would fail (or hang) at the first seed: an unknown tracker, a W&B mode wandb refuses,
    an online mode without a key or with a malformed one. Never contacts W&B."""
    tracker = cfg.get("tracker") or {}
    kind = tracker.get("name", "none")
    if kind not in ("none", "wandb"):
        raise ConfigError(f"tracker={kind} is not a tracker; valid: none, wandb")
    if kind != "wandb":
        return
    mode, source = wandb_mode(tracker.get("mode"))
    if mode not in MODES:
        raise ConfigError(f"{source}={mode!r} is not a W&B mode; valid: {', '.join(MODES)} (offline is the default: "
                          f"unset {source}), or tracker=none")
    if mode not in ONLINE:
        return
    key = os.environ.get("WANDB_API_KEY")
    if key:
        problem = key_problem(key)
        if problem:
            raise ConfigError(f"WANDB_API_KEY is malformed: {problem}; copy it again from https://wandb.ai/authorize, "
                              f"{OFFLINE_FIX}")
    elif not has_login():
        raise ConfigError(f"{source}={mode} needs a W&B API key and network, and there is no key: set WANDB_API_KEY "
                          f"(https://wandb.ai/authorize) or run `wandb login`, {OFFLINE_FIX}")


class Tracker:
    def start(self, cfg: DictConfig, seed: int) -> None: ...
    def log(self, metrics: dict[str, float], step: int) -> None: ...
    def finish(self, final: dict[str, float], reported: dict[str, float]) -> None: ...


class NoTracker(Tracker):
    pass


class WandbTracker(Tracker):
    def __init__(self, project: str, mode: str | None, entity: str | None = None) -> None:
        self.project, self.entity = project, entity
        # No account needed: offline unless a key is present or the user chose a mode.
        self.mode = wandb_mode(mode)[0]
        self.run: Any = None

    def start(self, cfg: DictConfig, seed: int) -> None:
        import wandb

        try:
            self.run = wandb.init(
                project=self.project,
                entity=self.entity,
                mode=self.mode,
                group=f"{cfg.paper.name}/{cfg.dataset.name}",
                job_type=cfg.model.name,
                name=f"{cfg.paper.name}-{cfg.dataset.name}-{cfg.model.name}-seed{seed}",
                config={**OmegaConf.to_container(cfg, resolve=True), "seed": seed},
                reinit="finish_previous",
                settings=wandb.Settings(init_timeout=INIT_TIMEOUT),  # no network: fail in seconds, not minutes
            )
        except (wandb.Error, TimeoutError, ConnectionError) as exc:
            first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
            raise ConfigError(f"W&B mode {self.mode} could not start a run ({first}): online needs network and a valid "
                              f"key; {OFFLINE_FIX}") from exc

    def log(self, metrics: dict[str, float], step: int) -> None:
        self.run.log(metrics, step=step)

    def finish(self, final: dict[str, float], reported: dict[str, float]) -> None:
        self.run.summary.update({f"test/{k}": v for k, v in final.items()})
        self.run.summary.update({f"reported/{k}": v for k, v in reported.items()})
        self.run.finish()


def make_tracker(cfg: DictConfig) -> Tracker:
    check_tracker(cfg)
    if cfg.tracker.name == "none":
        return NoTracker()
    return WandbTracker(cfg.tracker.project, cfg.tracker.get("mode"), cfg.tracker.get("entity"))
