"""PP-OCRv3 (Li et al., 2022): the released PP-OCR models measured on public benchmarks (ICDAR 2015, FUNSD)
against PP-OCRv2, PP-OCRv4 and Tesseract 5. Inference only: the paper's models are used as released."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets
from omegaconf import DictConfig

from replications.ocr import engines
from replications.ppocrv3 import data as pdata
from replications.ppocrv3 import figures, run
from shared.replication import LogFn, Replication
from shared.runner import result_path


class PPOCRv3Replication(Replication):
    name = "ppocrv3"
    paper_file = Path(__file__).with_name("paper.yaml")

    def load_data(self, cfg: DictConfig) -> datasets.Dataset:
        return pdata.load(cfg)

    def build_model(self, cfg: DictConfig, data: datasets.Dataset) -> Any:
        return engines.build(cfg.model, run.threads())

    def train(self, cfg: DictConfig, model: Any, data: datasets.Dataset, seed: int, log: LogFn) -> dict:
        # Released weights only: the paper trains on Baidu-internal data, which no one outside can re-run.
        return {"trained": False, "note": "inference only: released PP-OCR weights / Tesseract eng model",
                "images": len(data), "threads": run.threads()}

    def evaluate(self, cfg: DictConfig, model: Any, data: datasets.Dataset) -> dict[str, float]:
        out = result_path(cfg)
        details = out.with_name(f"{cfg.model.name}.details.json")
        metrics = run.evaluate(cfg, model, data, details)
        figures.update(out.parent.parent, cfg)  # table and figures from every details file present
        return metrics


REPLICATION = PPOCRv3Replication()
