"""TA-MoE (Chen et al., NeurIPS 2022, arXiv 2302.09915): topology-aware routing vs the GShard loss and
FasterMoE's topology gate, on the shared WikiText-2 GPT-MoE protocol routed as over an emulated 2 x 2 cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from replications.moe import wikitext
from replications.moe.lm import GPT
from replications.moe.lmtrain import perplexity
from replications.ta_moe import topology
from replications.ta_moe.train import fit, mean_dispatch, off_node_fraction
from shared.replication import LogFn, Replication
from shared.runinfo import REPO_ROOT
from shared.runner import result_path


class TAMoEReplication(Replication):
    name = "ta_moe"
    paper_file = Path(__file__).with_name("paper.yaml")

    def load_data(self, cfg: DictConfig) -> wikitext.Corpus:
        return wikitext.load_for(cfg.dataset.name, self.name)

    def gate_options(self, cfg: DictConfig) -> tuple[dict[str, Any], dict[str, Any]]:
        """The gate's options (world size, topology row source) and the resolved cluster bandwidths."""
        p, m = cfg.paper.protocol, cfg.model
        cluster = OmegaConf.to_container(p.cluster, resolve=True)
        resolved = topology.resolve(cluster, REPO_ROOT)
        options = OmegaConf.to_container(m.gate_options, resolve=True) if m.get("gate_options") else {}
        options["world_size"] = int(cluster["nodes"]) * int(cluster["ranks_per_node"])
        if m.gate == "topology" and m.get("topology_aware"):
            options["topology"] = resolved["topology"]
        if m.gate == "fastermoe_topology":
            options["ranks_per_node"] = int(cluster["ranks_per_node"])
        return options, resolved

    def build_model(self, cfg: DictConfig, data: wikitext.Corpus) -> GPT:
        p, m = cfg.paper.protocol, cfg.model
        if m.gate not in ("topology", "fastermoe_topology"):
            raise ValueError(f"ta_moe compares the topology gates; got gate '{m.gate}' "
                             "(valid: topology, fastermoe_topology)")
        if cfg.device != "cpu":
            raise ValueError(f"ta_moe's protocol runs on cpu (one process emulating the ranks), got {cfg.device}")
        options, self._cluster = self.gate_options(cfg)
        return GPT(len(data.vocab), p.d_model, p.heads, p.layers, p.seq_len, m.ffn_hidden, m.gate,
                   m.num_experts, options, list(p.cutoffs), p.div_value, p.dropout)

    def train(self, cfg: DictConfig, model: GPT, data: wikitext.Corpus, seed: int, log: LogFn) -> dict[str, Any]:
        threads = cfg.paper.protocol.get("threads")
        if threads:
            torch.set_num_threads(int(threads))
        self._summary = {**fit(cfg, model, data.train, data.valid, log), "cluster": self._cluster}
        return self._summary

    def evaluate(self, cfg: DictConfig, model: GPT, data: wikitext.Corpus) -> dict[str, float]:
        p = cfg.paper.protocol
        limit = p.smoke_eval_tokens if cfg.scale.name == "smoke" else None
        s = self._summary
        rpn = int(p.cluster.ranks_per_node)
        last = s["dispatch"][-max(1, len(s["dispatch"]) // 10):]  # the last 10% of steps: the learnt pattern
        return {"valid_ppl": perplexity(model, data.valid, p.seq_len, max_tokens=limit),
                "test_ppl": perplexity(model, data.test, p.seq_len, max_tokens=limit),
                "off_node_fraction": off_node_fraction(s["dispatch"], rpn),
                "off_node_fraction_last10pct": off_node_fraction(last, rpn),
                "local_rank_fraction": _self_fraction(mean_dispatch(s["dispatch"])),
                "dropped_fraction": s["mean_dropped_fraction"],
                "train_tokens_per_s": s["train_tokens_per_s"]}

    def after_replicate(self, cfg: DictConfig) -> None:
        """Called by `python -m replications.replicate ta_moe`: the table, the claim checks and the figures."""
        from replications.ta_moe import report  # lazy: keeps `python -m replications.ta_moe.report` warning-free

        report.main([str(result_path(cfg).parents[2])])


def _self_fraction(matrix: list[list[float]]) -> float:
    total = sum(sum(r) for r in matrix)
    return sum(matrix[i][i] for i in range(len(matrix))) / total if total else float("nan")


REPLICATION = TAMoEReplication()
