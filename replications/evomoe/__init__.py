"""EvoMoE (Nie et al., arXiv 2112.14397): dense-to-sparse gate vs Switch/GShard/Hash/BASE/dense on WikiText-2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from replications.evomoe.train import fit
from replications.moe import wikitext as wdata
from replications.moe.lm import GPT
from replications.moe.lmtrain import perplexity
from shared.replication import LogFn, Replication
from shared.runner import result_path


class EvoMoEReplication(Replication):
    name = "evomoe"
    paper_file = Path(__file__).with_name("paper.yaml")

    def load_data(self, cfg: DictConfig) -> wdata.Corpus:
        return wdata.load_for(cfg.dataset.name, self.name)

    def build_model(self, cfg: DictConfig, data: wdata.Corpus) -> GPT:
        p, m = cfg.paper.protocol, cfg.model
        options = OmegaConf.to_container(m.gate_options, resolve=True) if m.get("gate_options") else {}
        if m.gate == "hash":
            options = {"vocab_size": len(data.vocab), **options}
        device = torch.device(cfg.device)
        if device.type not in ("cpu", "cuda"):
            raise ValueError(f"evomoe runs on cpu or cuda, got device={cfg.device}")
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError("device=cuda but torch sees no GPU")
        model = GPT(len(data.vocab), p.d_model, p.heads, p.layers, p.seq_len, m.ffn_hidden,
                    None if m.gate == "dense" else m.gate, m.get("num_experts", 1), options,
                    list(p.cutoffs), p.div_value, p.dropout)
        return model.to(device)

    def train(self, cfg: DictConfig, model: GPT, data: wdata.Corpus, seed: int, log: LogFn) -> dict[str, Any]:
        threads = cfg.paper.protocol.get("threads")
        if threads:
            torch.set_num_threads(int(threads))
        self._summary = fit(cfg, model, data.train, data.valid, seed, log)
        return self._summary

    def evaluate(self, cfg: DictConfig, model: GPT, data: wdata.Corpus) -> dict[str, float]:
        p = cfg.paper.protocol
        limit = p.smoke_eval_tokens if cfg.scale.name == "smoke" else None
        precision = p.get("precision", "fp32")
        out = {"valid_ppl": perplexity(model, data.valid, p.seq_len, max_tokens=limit, precision=precision),
               "test_ppl": perplexity(model, data.test, p.seq_len, max_tokens=limit, precision=precision),
               "train_tokens_per_s": self._summary["train_tokens_per_s"],
               "mean_active_experts": self._summary["mean_active_experts"]}
        if p.get("target_valid_ppl") is not None:
            out["steps_to_target"] = self._summary["steps_to_target"]
        return out

    def after_replicate(self, cfg: DictConfig) -> None:
        """Called by `python -m replications.replicate evomoe`: the table, claim check and curves."""
        from replications.evomoe import report  # lazy: keeps `python -m replications.evomoe.report` warning-free

        report.main([str(result_path(cfg).parents[2])])


REPLICATION = EvoMoEReplication()
