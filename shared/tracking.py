"""Experiment trackers: ``none`` or ``wandb`` (offline unless WANDB_API_KEY is set).

One W&B run per seed, grouped by paper/dataset, with the reported numbers logged beside the
reproduced ones (``reported/<metric>`` vs ``test/<metric>``) so a dashboard can chart both.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from shared.config_check import OFFLINE_FIX, ConfigError, check_tracker, wandb_mode

INIT_TIMEOUT = 20.0  # seconds an online wandb.init waits for the server (wandb's default: 90, then retries)


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
