"""TA-MoE (Chen et al., NeurIPS 2022, arXiv 2302.09915): topology-aware routing vs the GShard loss and
FasterMoE's topology gate, on the shared WikiText-2 GPT-MoE protocol routed as over an emulated 2 x 2 cluster, and
on character-level Tiny Shakespeare (nanoGPT's CPU configuration, conf/dataset/tinyshakespeare.yaml; validation
only, as nanoGPT reports it).

train records every step's dispatch matrix and the cluster it routed over (in the summary, so in the record);
evaluate turns them into the off-node shares; report() returns the tables, the dispatch figures and the verdicts
of paper.yaml's claim specs (replications/ta_moe/report.py, measures.py: the replay's side files replay.json and
links.json).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from replications.moe import corpora
from replications.moe.lm import GPT
from replications.moe.lmtrain import mean_nll, perplexity
from replications.ta_moe import topology
from replications.ta_moe.train import fit, mean_dispatch, off_node_fraction
from shared.paths import REPO_ROOT
from shared.replication import LogFn, Replication, Run
from shared.report.paper_hook import PaperReport, PaperResults


class TAMoEReplication(Replication):
    name = "ta_moe"
    paper_file = Path(__file__).with_name("paper.yaml")

    def load_data(self, run: Run) -> Any:
        return corpora.load_for(run.cfg.dataset, self.name, list(run.cfg.paper.datasets))

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

    def build_model(self, run: Run, data: Any) -> GPT:
        cfg = run.cfg
        p, m = cfg.paper.protocol, cfg.model
        if m.gate not in ("topology", "fastermoe_topology"):
            raise ValueError(f"ta_moe compares the topology gates; got gate '{m.gate}' "
                             "(valid: topology, fastermoe_topology)")
        if run.device != "cpu":
            raise ValueError(f"ta_moe's protocol runs on cpu (one process emulating the ranks), got {run.device}")
        options, _ = self.gate_options(cfg)
        # the character protocol: no adaptive softmax (cutoffs null) and nanoGPT's init_std (WikiText-2: None)
        return GPT(len(data.vocab), p.d_model, p.heads, p.layers, p.seq_len, m.ffn_hidden, m.gate,
                   m.num_experts, options, None if p.cutoffs is None else list(p.cutoffs), p.div_value, p.dropout,
                   p.get("init_std"))

    def train(self, run: Run, model: GPT, data: Any, seed: int, log: LogFn) -> dict[str, Any]:
        cluster = self.gate_options(run.cfg)[1]  # the bandwidths and topology the gates were built with
        return {**fit(run.cfg, model, data.train, data.valid, log, seed=seed), "cluster": cluster}

    def evaluate(self, run: Run, model: GPT, data: Any, seed: int, summary: dict[str, Any]) -> dict[str, float]:
        p = run.cfg.paper.protocol
        limit = p.smoke_eval_tokens if run.cfg.scale.name == "smoke" else None
        rpn = int(p.cluster.ranks_per_node)
        dispatch = summary["dispatch"]
        last = dispatch[-max(1, len(dispatch) // 10):]  # the last 10% of steps (entries): the learnt pattern
        if corpora.has_test(data):
            quality = {"valid_ppl": perplexity(model, data.valid, p.seq_len, max_tokens=limit),
                       "test_ppl": perplexity(model, data.test, p.seq_len, max_tokens=limit)}
        else:  # validation only (Tiny Shakespeare): nanoGPT's loss in nats per character, and its perplexity
            loss = mean_nll(model, data.valid, p.seq_len, max_tokens=limit)
            quality = {"valid_loss": loss, "valid_ppl": math.exp(loss)}
        return {**quality,
                "off_node_fraction": off_node_fraction(dispatch, rpn),
                "off_node_fraction_last10pct": off_node_fraction(last, rpn),
                "local_rank_fraction": _self_fraction(mean_dispatch(dispatch)),
                "dropped_fraction": summary["mean_dropped_fraction"],
                "train_tokens_per_s": summary["train_tokens_per_s"]}

    def report(self, results: PaperResults) -> PaperReport | None:
        from replications.ta_moe import report  # lazy: matplotlib and scipy only for the page

        return report.build(results)


def _self_fraction(matrix: list[list[float]]) -> float:
    total = sum(sum(r) for r in matrix)
    return sum(matrix[i][i] for i in range(len(matrix))) / total if total else float("nan")


REPLICATION = TAMoEReplication()
