"""ERNIE-mmLayout (Wang et al., ACM MM 2022), re-implemented as a controlled ablation: does adding coarse-grained
units (label-free text lines) to a fine-grained layout Transformer improve FUNSD entity labelling, at equal
parameters? No code, weights or table numbers of the paper are obtainable; the abstract's claim is tested."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from replications.mmlayout import backbone, data, encode, metrics
from replications.mmlayout.model import Tagger, count_parameters
from replications.mmlayout.train import fit, per_doc_counts, predict
from shared.replication import LogFn, Replication, Run
from shared.report.paper_hook import PaperReport, PaperResults

MODELS = ("mmlayout", "mmlayout_control", "mmlayout_oracle")


class MMLayoutReplication(Replication):
    name = "mmlayout"
    paper_file = Path(__file__).with_name("paper.yaml")

    def load_data(self, run: Run) -> dict[str, Any]:
        cfg = run.cfg
        if cfg.dataset.name != "funsd":
            raise ValueError(f"mmlayout has no dataset '{cfg.dataset.name}'; valid: funsd")
        limit = cfg.paper.protocol.get("smoke_forms") if cfg.scale.name == "smoke" else None
        forms = data.load(int(limit) if limit else None)
        tok = backbone.tokenizer()
        m = cfg.model
        enc = dict(units=m.units, max_len=int(m.max_len), line_overlap=float(m.line_overlap), line_gap=float(m.line_gap))
        return {"forms": forms, "windows": {s: encode.encode_split(f, tok, **enc) for s, f in forms.items()}}

    def build_model(self, run: Run, data_: dict[str, Any]) -> Tagger:
        m = run.cfg.model
        enc = backbone.pretrained() if m.backbone == "minilm" else backbone.tiny()
        return Tagger(enc, len(data.LABELS), unit_layers=int(m.unit_layers), dropout=float(m.dropout)).to(run.device)

    def train(self, run: Run, model: Tagger, data_: dict[str, Any], seed: int, log: LogFn) -> dict[str, Any]:
        """Fine-tune, then predict the test forms once with the final model (selects nothing): the predicted tags go
        to evaluate under `_predicted`; the per-document counts and the example forms' tags, which the page's
        paired bootstrap and figure need, are stored in the record under `details`."""
        m, protocol = run.cfg.model, run.cfg.paper.protocol
        windows, forms = data_["windows"]["test"], data_["forms"]["test"]
        curve_fn = None
        if seed == protocol.curve_seed:  # test F1 after every epoch: the learning curve, never used to choose anything
            def curve_fn(mm: Tagger) -> dict[str, float]:
                pred = predict(mm, windows, forms, device=run.device, precision=m.precision)
                return {"test_f1": metrics.scores(np.array(per_doc_counts(forms, pred)))["test_f1"]}
        summary = fit(model, data_["windows"]["train"], epochs=int(m.epochs), batch_size=int(m.batch_size), lr=float(m.lr),
                      new_lr=float(m.new_lr), weight_decay=float(m.weight_decay), warmup_frac=float(m.warmup_frac),
                      clip_norm=float(m.clip_norm), seed=seed, device=run.device, precision=m.precision, log=log,
                      curve_fn=curve_fn)
        summary["parameters"] = count_parameters(model)
        summary["parameters_new"] = sum(p.numel() for p in model.new_parameters())
        summary["units_per_window"] = float(np.mean([max(w.units) + 1 for w in data_["windows"]["train"]]))
        predicted = predict(model, windows, forms, device=run.device, precision=m.precision)
        examples = {str(d) for d in protocol.example_forms}
        summary["details"] = {"doc_ids": [f.doc_id for f in forms], "count_fields": list(metrics.COUNT_FIELDS),
                              "per_doc": per_doc_counts(forms, predicted),
                              "examples": {f.doc_id: p for f, p in zip(forms, predicted) if f.doc_id in examples}}
        summary["_predicted"] = predicted
        return summary

    def evaluate(self, run: Run, model: Tagger, data_: dict[str, Any], seed: int, summary: dict[str, Any]
                 ) -> dict[str, float]:
        """Entity F1 (micro and per type), precision and recall of train's final test predictions."""
        forms, predicted = data_["forms"]["test"], summary["_predicted"]
        gold = [[data.LABELS[t] for t in f.tags] for f in forms]
        out = metrics.scores(np.array(summary["details"]["per_doc"]))
        out |= metrics.by_type(gold, predicted, [t.upper() for t in data.ENTITY_TYPES])
        out["params_m"] = count_parameters(model) / 1e6
        return {k: float(v) for k, v in out.items()}

    def report(self, results: PaperResults) -> PaperReport | None:
        """The ablation table, the claim verdicts and the figures (replications/mmlayout/report.py)."""
        from replications.mmlayout import report

        return report.build(results)


REPLICATION = MMLayoutReplication()
