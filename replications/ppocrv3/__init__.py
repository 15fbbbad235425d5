"""PP-OCRv3 (Li et al., 2022): the released PP-OCR models measured on public benchmarks (ICDAR 2015, FUNSD)
against PP-OCRv2, PP-OCRv4 and Tesseract 5. Inference only: the paper's models are used as released.

train = one pass of the released engine over the test images (replications/ppocrv3/run.py: scores, latency and
the per-image details the page's paired bootstrap needs, stored in the record's ``runs[i].train.details``);
evaluate = the metrics that pass measured (handed over as ``_metrics``). report() returns the page as data
(replications/ppocrv3/report.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets

from replications.ocr import engines
from replications.ppocrv3 import data as pdata
from replications.ppocrv3 import run as prun
from shared.replication import LogFn, Replication, Run
from shared.report.paper_hook import PaperReport, PaperResults


class PPOCRv3Replication(Replication):
    name = "ppocrv3"
    paper_file = Path(__file__).with_name("paper.yaml")

    def load_data(self, run: Run) -> datasets.Dataset:
        return pdata.load(run.cfg)

    def build_model(self, run: Run, data: datasets.Dataset) -> Any:
        return engines.build(run.cfg.model, prun.threads())

    def train(self, run: Run, model: Any, data: datasets.Dataset, seed: int, log: LogFn) -> dict[str, Any]:
        # Released weights only: the paper trains on Baidu-internal data, which no one outside can re-run. The
        # "training" step is the measurement pass; its per-image details are stored for the page's bootstrap.
        metrics, details = prun.measure(run.cfg, model, data)
        return {"trained": False, "note": "inference only: released PP-OCR weights / Tesseract eng model",
                "images": len(data), "threads": prun.threads(), "details": details, "_metrics": metrics}

    def evaluate(self, run: Run, model: Any, data: datasets.Dataset, seed: int,
                 summary: dict[str, Any]) -> dict[str, float]:
        return dict(summary["_metrics"])

    def report(self, results: PaperResults) -> PaperReport | None:
        from replications.ppocrv3 import report

        return report.build(results)


REPLICATION = PPOCRv3Replication()
