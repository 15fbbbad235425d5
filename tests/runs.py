"""A ``Run`` for tests that call a Replication's methods directly on a hand-made cfg (the runner builds the
real one with shared.runner.make_run). Names missing from the cfg fall back to placeholders."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from shared.replication import Run


def run_of(cfg: DictConfig | dict, seeds: tuple[int, ...] = (1,), output_dir: Path | None = None) -> Run:
    cfg = cfg if isinstance(cfg, DictConfig) else OmegaConf.create(cfg)

    def name(key: str) -> str:
        return str(OmegaConf.select(cfg, f"{key}.name", default=None) or f"test_{key}")

    return Run(paper=name("paper"), dataset=name("dataset"), model=name("model"), seeds=tuple(seeds),
               output_dir=output_dir or Path("unused-output-dir"), cfg=cfg)
