"""FlexMoE (Nie et al., SIGMOD 2023, arXiv 2304.03946): dynamic expert placement against routing imbalance and
fluctuation. No official code exists (fact sheet); what runs here, on CPU:

1. the premise, measured: per-step expert loads of the shared WikiText-2 GPT-MoE (Switch / GShard gates, E = 8
   and 16; models of this package) and of the character-level Tiny Shakespeare GPT-MoE (nanoGPT's CPU protocol,
   conf/dataset/tinyshakespeare.yaml; validation only, as nanoGPT reports it), their imbalance and fluctuation
   (train.py, stats.py); train writes each run's trace beside the results (<paper folder>/traces/), a benchmark
   input like the simulator's output;
2. a trace-driven simulator of step time (modelled, not measured) for static placement, FasterMoE's
   shadowing and a reconstruction of FlexMoE's replicate / shrink / migrate heuristic (simulate.py,
   policies.py, stepmodel.py): a manual step after the protocol, writing simulation.json into its --out;
3. expert replication for real (replicated.py: replicas of a heavy expert split its tokens, their gradients
   all-reduced inside the replica group; tests/test_flexmoe_replication.py), and its all-to-all time on the
   emulated testbed (a2a_bench.py, a manual step where root + ip netns exist, writing replica_a2a.json).

report() returns the tables, claim checks and figures as data (report.py), reading those two side files
through ``results.side_file`` where they are present.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from replications.flexmoe import stats
from replications.flexmoe.train import fit
from replications.moe import corpora
from replications.moe.lm import GPT
from replications.moe.lmtrain import mean_nll, perplexity
from shared.atomic import atomic_path
from shared.replication import LogFn, Replication, Run
from shared.report.paper_hook import PaperReport, PaperResults


def trace_path(run: Run, seed: int) -> Path:
    """<paper folder>/traces/<dataset>_<model>_s<seed>.npz beside the run's result folder (results/flexmoe/traces
    for the protocol, its results_dir for any other run)."""
    return run.output_dir.parent / "traces" / f"{run.dataset}_{run.model}_s{seed}.npz"


class FlexMoEReplication(Replication):
    name = "flexmoe"
    paper_file = Path(__file__).with_name("paper.yaml")

    def load_data(self, run: Run) -> Any:
        return corpora.load_for(run.cfg.dataset, self.name, list(run.cfg.paper.datasets))

    def build_model(self, run: Run, data: Any) -> GPT:
        p, m = run.cfg.paper.protocol, run.cfg.model
        if m.gate not in ("switch", "gshard"):
            raise ValueError(f"flexmoe records Switch and GShard routing; got gate '{m.gate}' (valid: switch, gshard)")
        if m.gate == "gshard" and m.gate_options.get("second_policy", "sampling") == "random":
            raise ValueError("second_policy 'random' unselects second choices; the traces count every top-k "
                             "choice as routed, so use 'sampling' or 'top'")
        options = OmegaConf.to_container(m.gate_options, resolve=True) if m.get("gate_options") else {}
        # cutoffs null (Tiny Shakespeare): a full softmax tied to the embedding, nanoGPT's; init_std likewise
        return GPT(len(data.vocab), p.d_model, p.heads, p.layers, p.seq_len, m.ffn_hidden, m.gate,
                   m.num_experts, options, None if p.cutoffs is None else list(p.cutoffs), p.div_value, p.dropout,
                   p.get("init_std"))

    def train(self, run: Run, model: GPT, data: Any, seed: int, log: LogFn) -> dict[str, Any]:
        cfg = run.cfg
        summary, routed, kept = fit(cfg, model, data.train, data.valid, log, seed)
        path = trace_path(run, seed)
        with atomic_path(path) as tmp:
            with open(tmp, "wb") as f:
                np.savez_compressed(f, routed=routed, kept=kept)
        window = int(cfg.paper.protocol.window)
        loads = routed.sum(2)  # [steps, layers, E]
        per_layer = [stats.summarise(loads[:, i], window) for i in range(loads.shape[1])]
        summary.update(trace=path.name, trace_shape={"routed": list(routed.shape), "kept": list(kept.shape)},
                       per_layer=per_layer,
                       dropped_fraction=float(1 - kept.sum() / max(routed.sum(), 1)))
        return summary

    def evaluate(self, run: Run, model: GPT, data: Any, seed: int, summary: dict[str, Any]) -> dict[str, float]:
        p, s = run.cfg.paper.protocol, summary
        limit = p.smoke_eval_tokens if run.cfg.scale.name == "smoke" else None
        layer_mean = {k: float(np.mean([la[k] for la in s["per_layer"]])) for k in s["per_layer"][0]}
        if corpora.has_test(data):
            out = {"valid_ppl": perplexity(model, data.valid, p.seq_len, max_tokens=limit),
                   "test_ppl": perplexity(model, data.test, p.seq_len, max_tokens=limit)}
        else:  # validation only (Tiny Shakespeare): nanoGPT's loss in nats per character, and its perplexity
            loss = mean_nll(model, data.valid, p.seq_len, max_tokens=limit)
            out = {"valid_loss": loss, "valid_ppl": math.exp(loss)}
        out |= {"dropped_fraction": s["dropped_fraction"], "train_tokens_per_s": s["train_tokens_per_s"]}
        for key in ("imbalance_mean", "imbalance_first_half", "imbalance_second_half", "tv_consecutive",
                    "tv_noise_floor", "tv_over_noise", "spearman_consecutive", "spearman_lagged",
                    "hot_expert_changes"):
            out[key] = layer_mean[key]  # mean over the MoE layers
        return out

    def report(self, results: PaperResults) -> PaperReport | None:
        from replications.flexmoe import report  # lazy: matplotlib and scipy only for the page

        return report.build(results)


REPLICATION = FlexMoEReplication()
