"""ERNIE-mmLayout (Wang et al., ACM MM 2022), re-implemented as a controlled ablation: does adding coarse-grained
units (label-free text lines) to a fine-grained layout Transformer improve FUNSD entity labelling, at equal
parameters? No code, weights or table numbers of the paper are obtainable; the abstract's claim is tested."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig

from replications.mmlayout import backbone, data, encode, metrics
from replications.mmlayout.model import Tagger, count_parameters
from replications.mmlayout.train import fit, per_doc_counts, predict
from shared.atomic import write_json_atomic
from shared.replication import LogFn, Replication

MODELS = ("mmlayout", "mmlayout_control", "mmlayout_oracle")


def details_path(result_file: Path, seed: int) -> Path:
    """Per-seed per-document counts and the example forms' predictions, beside the result file."""
    return result_file.with_name(f"{result_file.stem}.seed{seed}.details.json")


class MMLayoutReplication(Replication):
    name = "mmlayout"
    paper_file = Path(__file__).with_name("paper.yaml")

    def load_data(self, cfg: DictConfig) -> dict[str, Any]:
        if cfg.dataset.name != "funsd":
            raise ValueError(f"mmlayout has no dataset '{cfg.dataset.name}'; valid: funsd")
        limit = cfg.paper.protocol.get("smoke_forms") if cfg.scale.name == "smoke" else None
        forms = data.load(int(limit) if limit else None)
        tok = backbone.tokenizer()
        m = cfg.model
        enc = dict(units=m.units, max_len=int(m.max_len), line_overlap=float(m.line_overlap), line_gap=float(m.line_gap))
        return {"forms": forms, "windows": {s: encode.encode_split(f, tok, **enc) for s, f in forms.items()}}

    def build_model(self, cfg: DictConfig, data_: dict[str, Any]) -> Tagger:
        m = cfg.model
        enc = backbone.pretrained() if m.backbone == "minilm" else backbone.tiny()
        return Tagger(enc, len(data.LABELS), unit_layers=int(m.unit_layers), dropout=float(m.dropout)).to(cfg.device)

    def train(self, cfg: DictConfig, model: Tagger, data_: dict[str, Any], seed: int, log: LogFn) -> dict:
        m, protocol = cfg.model, cfg.paper.protocol
        torch.set_num_threads(int(protocol.threads))
        curve_fn = None
        if seed == protocol.curve_seed:  # test F1 after every epoch: the learning curve, never used to choose anything
            def curve_fn(mm: Tagger) -> dict[str, float]:
                pred = predict(mm, data_["windows"]["test"], data_["forms"]["test"], device=cfg.device,
                               precision=m.precision)
                return {"test_f1": metrics.scores(np.array(per_doc_counts(data_["forms"]["test"], pred)))["test_f1"]}
        summary = fit(model, data_["windows"]["train"], epochs=int(m.epochs), batch_size=int(m.batch_size), lr=float(m.lr),
                      new_lr=float(m.new_lr), weight_decay=float(m.weight_decay), warmup_frac=float(m.warmup_frac),
                      clip_norm=float(m.clip_norm), seed=seed, device=cfg.device, precision=m.precision, log=log,
                      curve_fn=curve_fn)
        self._seed = seed  # evaluate() names its details file by seed
        summary["parameters"] = count_parameters(model)
        summary["parameters_new"] = sum(p.numel() for p in model.new_parameters())
        summary["units_per_window"] = float(np.mean([max(w.units) + 1 for w in data_["windows"]["train"]]))
        return summary

    def evaluate(self, cfg: DictConfig, model: Tagger, data_: dict[str, Any]) -> dict[str, float]:
        from shared.runner import result_path

        forms = data_["forms"]["test"]
        pred = predict(model, data_["windows"]["test"], forms, device=cfg.device, precision=cfg.model.precision)
        per_doc = per_doc_counts(forms, pred)
        gold = [[data.LABELS[t] for t in f.tags] for f in forms]
        out = metrics.scores(np.array(per_doc))
        out |= metrics.by_type(gold, pred, [t.upper() for t in data.ENTITY_TYPES])
        out["params_m"] = count_parameters(model) / 1e6
        examples = set(cfg.paper.protocol.example_forms)
        write_json_atomic(details_path(result_path(cfg), getattr(self, "_seed", -1)), {
            "model": cfg.model.name, "units": cfg.model.units, "doc_ids": [f.doc_id for f in forms],
            "count_fields": list(metrics.COUNT_FIELDS), "per_doc": per_doc, "metrics": out,
            "examples": {f.doc_id: p for f, p in zip(forms, pred) if f.doc_id in examples}})
        return {k: float(v) for k, v in out.items()}

    def after_replicate(self, cfg: DictConfig) -> None:
        """`python -m replications.replicate mmlayout`: the ablation table, the claim verdict and the figures."""
        from replications.mmlayout import report
        from shared.runner import result_path

        report.write(result_path(cfg).parents[2], cfg)


REPLICATION = MMLayoutReplication()
