"""The one interface through which the runner reaches every paper.

A paper package (``replications/<paper>/``) exposes ``REPLICATION``, an instance of a subclass. The runner
builds one ``Run`` per (dataset, model) and hands it to every method: ``load_data`` once, then per seed
``build_model`` -> ``train`` -> ``evaluate`` (which receives what ``train`` returned, so no paper keeps
per-run state on its module-level object). After the protocol, ``report`` turns the paper's result
records into its page as data (shared.report.paper_hook); shared.report writes it. No method writes result files.
Metrics are returned in the units the paper reports (e.g. F1 in percent) so they compare directly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from shared.report.paper_hook import PaperReport, PaperResults

LogFn = Callable[[dict[str, float], int], None]  # (metrics, step) -> None, e.g. per-epoch curves


@dataclass(frozen=True)
class Run:
    """One (paper, dataset, model) of a protocol: its identity, seeds, output folder and composed config."""

    paper: str
    dataset: str
    model: str  # the model's one name: the result file's name and the page's row
    seeds: tuple[int, ...]
    output_dir: Path  # <results root>/<paper>/<dataset>: where the runner writes <model>.json
    cfg: DictConfig

    @property
    def device(self) -> str:
        return str(self.cfg.get("device") or "cpu")

    @property
    def label(self) -> str:
        return f"{self.paper}/{self.dataset}/{self.model}"


class Replication(ABC):
    name: str  # matches conf/paper/<name>.yaml
    paper_file: Path  # the paper's reported numbers: replications/<paper>/paper.yaml

    @abstractmethod
    def load_data(self, run: Run) -> Any:
        """Seed-independent data for run.dataset (fetched through shared.data)."""

    @abstractmethod
    def build_model(self, run: Run, data: Any) -> Any:
        """A fresh model for run.cfg.model; called after the seed is set."""

    @abstractmethod
    def train(self, run: Run, model: Any, data: Any, seed: int, log: LogFn) -> dict[str, Any]:
        """Train under the paper's protocol; returns a summary (best epoch, epochs run, ...) handed to
        ``evaluate`` and stored in the record. Keys starting with ``_`` (e.g. this seed's split or a
        measurement kept for evaluate) reach ``evaluate`` only and are never stored."""

    @abstractmethod
    def evaluate(self, run: Run, model: Any, data: Any, seed: int, summary: dict[str, Any]) -> dict[str, float]:
        """Final metrics of the trained model, named as in paper.yaml (e.g. test_micro_f1)."""

    def report(self, results: PaperResults) -> PaperReport | None:
        """The paper's own page (tables, claims, figures) as data, from its complete result records; None when
        the paper has no page beyond the shared per-metric table. Called by `make report` and after a protocol."""
        return None
