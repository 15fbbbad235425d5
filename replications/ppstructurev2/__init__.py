"""PP-StructureV2 (Li et al., 2022): the released SLANet table model and CDLA layout model measured on public data
(PubTabNet validation tables, PubLayNet example pages), with the KIE metrics (SER, RE) and the TB-YX reading
order. Inference only: the released weights are used as published; the PubLayNet layout model and the
VI-LayoutXLM weights are not obtainable, so their numbers stay references.

train = one pass of the released model over the items (replications/ppstructurev2/run.py: scores, latency and
the per-item details the page shows, stored in the record's ``runs[i].train.details``); evaluate = the metrics
that pass measured (handed over as ``_metrics``). report() returns the page as data (report.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets

from replications.ocr.models import model_path
from replications.ppstructurev2 import data as pdata
from replications.ppstructurev2 import run as prun
from shared.replication import LogFn, Replication, Run
from shared.report.paper_hook import PaperReport, PaperResults


class PPStructureV2Replication(Replication):
    name = "ppstructurev2"
    paper_file = Path(__file__).with_name("paper.yaml")

    def load_data(self, run: Run) -> datasets.Dataset:
        task = run.cfg.model.task
        if task == "table":
            return pdata.load_tables(run.cfg)
        if task == "layout":
            return pdata.load_pages(run.cfg)
        raise ValueError(f"unknown task '{task}'; valid: table, layout")

    def build_model(self, run: Run, data: datasets.Dataset) -> Any:
        m = run.cfg.model
        if m.task == "table":
            from replications.ocr.engines import PPOCREngine
            from replications.ppstructurev2.slanet import SLANet

            return {"structure": SLANet(str(model_path(m.weights)), prun.threads()),
                    "ocr": PPOCREngine(m.ocr.version, dict(m.ocr.det), 0.0, False, prun.threads())}
        from replications.ppstructurev2.layout import PicoDet, architecture

        path = model_path(m.weights)
        det = PicoDet(str(path), prun.threads(), m.score_threshold, m.nms_threshold)
        det.arch = architecture(path)
        return det

    def train(self, run: Run, model: Any, data: datasets.Dataset, seed: int, log: LogFn) -> dict[str, Any]:
        # Released weights only: training SLANet (PubTabNet, 100 epochs) or PicoDet is out of scope on 2 CPU cores.
        # The "training" step is the measurement pass; its per-item details are stored for the page.
        measure = prun.measure_tables if run.cfg.model.task == "table" else prun.measure_layout
        metrics, details = measure(run.cfg, model, data)
        return {"trained": False, "note": f"inference only: released {run.cfg.model.weights} weights",
                "items": len(data), "threads": prun.threads(), "details": details, "_metrics": metrics}

    def evaluate(self, run: Run, model: Any, data: datasets.Dataset, seed: int,
                 summary: dict[str, Any]) -> dict[str, float]:
        return dict(summary["_metrics"])

    def report(self, results: PaperResults) -> PaperReport | None:
        from replications.ppstructurev2 import report

        return report.build(results)


REPLICATION = PPStructureV2Replication()
