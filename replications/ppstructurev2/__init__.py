"""PP-StructureV2 (Li et al., 2022): the released SLANet table model and CDLA layout model measured on public data
(PubTabNet validation tables, PubLayNet example pages), with the KIE metrics (SER, RE) and the TB-YX reading
order. Inference only: the released weights are used as published; the PubLayNet layout model and the
VI-LayoutXLM weights are not obtainable, so their numbers stay references."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets
from omegaconf import DictConfig

from replications.ppstructurev2 import assets, run
from replications.ppstructurev2 import data as pdata
from shared.replication import LogFn, Replication
from shared.runner import result_path


class PPStructureV2Replication(Replication):
    name = "ppstructurev2"
    paper_file = Path(__file__).with_name("paper.yaml")

    def load_data(self, cfg: DictConfig) -> datasets.Dataset:
        if cfg.model.task == "table":
            return pdata.load_tables(cfg)
        if cfg.model.task == "layout":
            return pdata.load_pages(cfg)
        raise ValueError(f"unknown task '{cfg.model.task}'; valid: table, layout")

    def build_model(self, cfg: DictConfig, data: datasets.Dataset) -> Any:
        if cfg.model.task == "table":
            from replications.ocr.engines import PPOCREngine
            from replications.ppstructurev2.table import SLANet

            o = cfg.model.ocr
            return {"structure": SLANet(str(assets.model_path(cfg.model.weights)), run.threads()),
                    "ocr": PPOCREngine(o.version, dict(o.det), 0.0, False, run.threads())}
        from replications.ppstructurev2.layout import PicoDet, architecture

        path = assets.model_path(cfg.model.weights)
        det = PicoDet(str(path), run.threads(), cfg.model.score_threshold, cfg.model.nms_threshold)
        det.arch = architecture(path)
        return det

    def train(self, cfg: DictConfig, model: Any, data: datasets.Dataset, seed: int, log: LogFn) -> dict:
        # Released weights only: training SLANet (PubTabNet, 100 epochs) or PicoDet is out of scope on 2 CPU cores.
        return {"trained": False, "note": f"inference only: released {cfg.model.weights} weights",
                "items": len(data), "threads": run.threads()}

    def evaluate(self, cfg: DictConfig, model: Any, data: datasets.Dataset) -> dict[str, float]:
        details = result_path(cfg).with_name(f"{cfg.model.name}.details.json")
        if cfg.model.task == "table":
            return run.evaluate_tables(cfg, model, data, details)
        return run.evaluate_layout(cfg, model, data, details)

    def after_replicate(self, cfg: DictConfig) -> None:
        """results/ppstructurev2/README.md and figures, rebuilt from the details files present."""
        from replications.ppstructurev2 import figures

        figures.update(result_path(cfg).parents[1])


REPLICATION = PPStructureV2Replication()
