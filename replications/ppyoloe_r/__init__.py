"""PP-YOLOE-R (Wang et al., 2022): the rotated detector rebuilt in PyTorch, checked against the release's
parameter and FLOP counts, trained from scratch on a procedural rotated-object set for the loss / angle-head
ablation, with the DOTA Task-1 protocol (split, merge, evaluate) for a user who has DOTA-v1.0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from replications.ppyoloe_r import dota_data, synthetic
from replications.ppyoloe_r.model import PPYOLOER
from replications.ppyoloe_r.train import fit, map_on, weights_path
from shared.atomic import atomic_path
from shared.replication import LogFn, Replication, Run
from shared.report.paper_hook import PaperReport, PaperResults

MODELS = ("ppyoloe_r", "ppyoloe_r_smoothl1", "ppyoloe_r_direct_angle")


class PPYOLOERReplication(Replication):
    name = "ppyoloe_r"
    paper_file = Path(__file__).with_name("paper.yaml")

    def load_data(self, run: Run) -> dict[str, Any]:
        d = run.cfg.dataset
        if d.name == "synthetic_rotated":
            gen = dict(size=d.image_size, objects=tuple(d.objects), scale=tuple(d.scale))
            return {"train": synthetic.generate(d.n_train, seed=d.seeds.train, **gen),
                    "val": synthetic.generate(d.n_val, seed=d.seeds.val, **gen),
                    "test": synthetic.generate(d.n_test, seed=d.seeds.test, **gen)}
        if d.name == "dota_v1":
            root = dota_data.full_root()
            tr_img, tr_lab, tr_sha = dota_data.read_split(root, "train")
            va_img, va_lab, va_sha = dota_data.read_split(root, "val")
            return {"train": dota_data.patches(tr_img, tr_lab, d.patch_size, d.gap), "val_images": va_img,
                    "val_labels": va_lab, "label_sha256": {"train": tr_sha, "val": va_sha}}
        raise ValueError(f"ppyoloe_r has no dataset '{d.name}'; valid: synthetic_rotated, dota_v1")

    def build_model(self, run: Run, data: dict[str, Any]) -> torch.nn.Module:
        m = run.cfg.model
        return PPYOLOER(m.size, num_classes=len(data["train"].classes), angle=m.angle).to(run.device)

    def train(self, run: Run, model: torch.nn.Module, data: dict[str, Any], seed: int, log: LogFn) -> dict:
        cfg = run.cfg
        m, protocol = cfg.model, cfg.paper.protocol
        curve = seed == protocol.curve_seed and run.model == protocol.curve_model and "val" in data
        summary = fit(model, data["train"], m.steps, m.batch_size, m.lr, m.weight_decay, m.warmup, m.box, seed,
                      eval_every=protocol.curve_every if curve else 0,
                      evaluate_fn=(lambda mm: map_on(mm, data["val"], pre_nms=self._pre_nms(run))["map"]) if curve else None,
                      log=log)
        if curve:  # kept for the DOTA example figure of the page (outputs/, never committed)
            path = weights_path(run.dataset, cfg.scale.name, seed)
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_path(path) as tmp:
                torch.save({"state_dict": model.state_dict(), "size": m.size, "angle": m.angle,
                            "image_size": int(cfg.dataset.get("image_size", 1024))}, tmp)
        if "label_sha256" in data:
            summary["label_sha256"] = data["label_sha256"]
        return summary

    @staticmethod
    def _pre_nms(run: Run) -> int:
        return int(run.cfg.dataset.get("pre_nms", 2000))

    def evaluate(self, run: Run, model: torch.nn.Module, data: dict[str, Any], seed: int,
                 summary: dict[str, Any]) -> dict[str, float]:
        if "test" in data:
            metrics = map_on(model, data["test"], pre_nms=self._pre_nms(run))
            return {"test_map": metrics["map"], **{f"test_ap_{k[3:]}": v for k, v in metrics.items() if k.startswith("ap/")}}
        from replications.ppyoloe_r.dota_protocol import evaluate_large

        metrics = evaluate_large(model, data["val_images"], data["val_labels"], size=run.cfg.dataset.patch_size,
                                 gap=run.cfg.dataset.gap)
        return {"val_map": metrics["map"]}

    def report(self, results: PaperResults) -> PaperReport | None:
        """The ablation with its claims, the figures and the architecture table (replications/ppyoloe_r/report.py)."""
        from replications.ppyoloe_r import report

        return report.build(results)


REPLICATION = PPYOLOERReplication()
