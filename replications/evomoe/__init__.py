"""EvoMoE (Nie et al., arXiv 2112.14397): dense-to-sparse gate vs Switch/GShard/Hash/BASE/dense on WikiText-2
and on character-level Tiny Shakespeare (nanoGPT's CPU configuration; validation only, as nanoGPT reports it).

train = replications/evomoe/train.py's fit (its summary carries the curve, tokens/s and active experts that
evaluate reports); report() returns the comparison table, the claim checks and the curves as data
(replications/evomoe/report.py).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf

from replications.evomoe.train import fit
from replications.moe import corpora
from replications.moe.lm import GPT
from replications.moe.lmtrain import mean_nll, perplexity
from shared.replication import LogFn, Replication, Run
from shared.report.paper_hook import PaperReport, PaperResults


class EvoMoEReplication(Replication):
    name = "evomoe"
    paper_file = Path(__file__).with_name("paper.yaml")

    def load_data(self, run: Run) -> Any:
        return corpora.load_for(run.cfg.dataset, self.name, list(run.cfg.paper.datasets))

    def build_model(self, run: Run, data: Any) -> GPT:
        p, m = run.cfg.paper.protocol, run.cfg.model
        options = OmegaConf.to_container(m.gate_options, resolve=True) if m.get("gate_options") else {}
        if m.gate == "hash":
            options = {"vocab_size": len(data.vocab), **options}
        device = torch.device(run.device)
        if device.type not in ("cpu", "cuda"):
            raise ValueError(f"evomoe runs on cpu or cuda, got device={run.device}")
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError("device=cuda but torch sees no GPU")
        model = GPT(len(data.vocab), p.d_model, p.heads, p.layers, p.seq_len, m.ffn_hidden,
                    None if m.gate == "dense" else m.gate, m.get("num_experts", 1), options,
                    None if p.cutoffs is None else list(p.cutoffs), p.div_value, p.dropout, p.get("init_std"))
        return model.to(device)

    def train(self, run: Run, model: GPT, data: Any, seed: int, log: LogFn) -> dict[str, Any]:
        return fit(run.cfg, model, data.train, data.valid, seed, log)

    def evaluate(self, run: Run, model: GPT, data: Any, seed: int, summary: dict[str, Any]) -> dict[str, float]:
        p = run.cfg.paper.protocol
        limit = p.smoke_eval_tokens if run.cfg.scale.name == "smoke" else None
        precision = p.get("precision", "fp32")
        if corpora.has_test(data):
            out = {"valid_ppl": perplexity(model, data.valid, p.seq_len, max_tokens=limit, precision=precision),
                   "test_ppl": perplexity(model, data.test, p.seq_len, max_tokens=limit, precision=precision)}
        else:  # validation only (Tiny Shakespeare): nanoGPT's loss in nats per character, and its perplexity
            loss = mean_nll(model, data.valid, p.seq_len, max_tokens=limit, precision=precision)
            out = {"valid_loss": loss, "valid_ppl": math.exp(loss)}
        out |= {"train_tokens_per_s": summary["train_tokens_per_s"],
                "mean_active_experts": summary["mean_active_experts"]}
        if p.get("target_valid_ppl") is not None:
            out["steps_to_target"] = summary["steps_to_target"]
        return out

    def report(self, results: PaperResults) -> PaperReport | None:
        from replications.evomoe import report  # lazy: matplotlib and scipy only when a page is built

        return report.build(results)


REPLICATION = EvoMoEReplication()
