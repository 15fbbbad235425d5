"""The one interface through which the runner reaches every paper.

A paper package (``replications/<paper>/``) exposes ``REPLICATION``, an instance of a subclass.
For each seed the runner calls ``build_model`` -> ``train`` -> ``evaluate``; ``load_data`` runs once.
Metrics are returned in the units the paper reports (e.g. F1 in percent) so they compare directly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

LogFn = Callable[[dict[str, float], int], None]  # (metrics, step) -> None, e.g. per-epoch curves


class Replication(ABC):
    name: str  # matches conf/paper/<name>.yaml
    paper_file: Path  # the paper's reported numbers: replications/<paper>/paper.yaml

    @abstractmethod
    def load_data(self, cfg: DictConfig) -> Any:
        """Seed-independent data for cfg.dataset (fetched through shared.data)."""

    @abstractmethod
    def build_model(self, cfg: DictConfig, data: Any) -> Any:
        """A fresh model for cfg.model; called after the seed is set."""

    @abstractmethod
    def train(self, cfg: DictConfig, model: Any, data: Any, seed: int, log: LogFn) -> dict[str, Any]:
        """Train under the paper's protocol; returns a summary (best epoch, epochs run, ...)."""

    @abstractmethod
    def evaluate(self, cfg: DictConfig, model: Any, data: Any) -> dict[str, float]:
        """Final metrics of the trained model, named as in paper.yaml (e.g. test_micro_f1)."""

    def after_replicate(self, cfg: DictConfig) -> None:  # noqa: B027 (optional hook, empty by default)
        """The paper's own tables and figures, rebuilt from every result file under results/ (built on
        shared.report); `python -m replications.replicate <paper>` calls it once after its runs."""
