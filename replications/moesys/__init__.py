"""MoESys / SE-MoE (Shen et al., arXiv 2205.10034): the mechanisms of ring-memory inference and elastic
expert-parallel training, measured on CPU. The paper's throughput gains over DeepSpeed need its GPU clusters
and are not re-measured here (paper.yaml: claims; results/moesys/README.md: what each status rests on).

Two "models" under one synthetic dataset (markov_tokens, a planted chain):
- ring_memory: nothing to train; ``train`` runs the throughput measurement (ringbench.py) and returns it as
  the summary the result file keeps; ``evaluate`` reads the headline figures from it.
- elastic: ``train`` runs the leave/rejoin scenario under torchrun (elastic_run.py) and the uninterrupted
  reference; ``evaluate`` compares the two curves.
``report()`` returns the page (claims, ring table, elastic run, plots) as data (replications/moesys/report.py; the
claims are paper.yaml's specs, the mechanisms judged by replications/moesys/measures.py).
"""

from __future__ import annotations

import math
import statistics
import tempfile
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from replications.moesys.data import MarkovTokens
from shared import progress
from shared.replication import LogFn, Replication, Run
from shared.report.paper_hook import PaperReport, PaperResults


def _plain(node: Any) -> Any:
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node


class MoESysReplication(Replication):
    name = "moesys"
    paper_file = Path(__file__).with_name("paper.yaml")

    def load_data(self, run: Run) -> MarkovTokens:
        d = run.cfg.dataset
        if d.name != "markov_tokens":
            raise ValueError(f"moesys has no loader for dataset '{d.name}'; valid: markov_tokens")
        return MarkovTokens(int(d.vocab), int(d.branching), int(d.chain_seed))

    def build_model(self, run: Run, data: MarkovTokens) -> dict[str, Any]:
        cfg = run.cfg
        if cfg.device != "cpu" and cfg.model.name == "elastic":
            raise ValueError("the elastic scenario runs gloo on CPU processes; use device=cpu")
        if cfg.device != "cpu":
            raise ValueError("the ring-memory protocol here is the CPU one (file -> RAM); on a GPU run "
                             "`python -m replications.moesys.gpu_ring` (README: replications/moesys)")
        return {"kind": cfg.model.name}  # the models are built inside the measurement / the torchrun workers

    def train(self, run: Run, model: dict[str, Any], data: MarkovTokens, seed: int, log: LogFn) -> dict[str, Any]:
        cfg = run.cfg
        if cfg.model.name == "ring_memory":
            return self._ring(cfg, data, seed)  # evaluate reads its figures from this summary
        if cfg.model.name == "elastic":
            return self._elastic(cfg, data, seed, log)
        raise ValueError(f"moesys has no model '{cfg.model.name}'; valid: ring_memory, elastic")

    def _ring(self, cfg: DictConfig, data: MarkovTokens, seed: int) -> dict[str, Any]:
        from replications.moesys import ringbench

        m, r = cfg.model, cfg.paper.protocol.ring
        p = {"vocab": data.vocab, "d_model": m.d_model, "heads": m.heads, "layers": m.layers,
             "sections": m.sections, "ffn_hidden": m.ffn_hidden, "num_experts": m.num_experts, "gate": m.gate,
             "settings": [list(s) for s in r.settings], "passes": r.passes, "repeats": r.repeats,
             "ks": list(r.ks)}
        model = ringbench.build_model(p, seed)
        before = ringbench.load_average()
        with tempfile.TemporaryDirectory(prefix="moesys-ring-", dir=r.get("storage_dir")) as tmp:
            stores, path = ringbench.cpu_stores(model, Path(tmp))
            # a bar over (setting, repeat) in place of bench's per-repeat lines; it draws between timed runs only
            with progress.bar(desc="ring repeats", total=len(p["settings"]) * int(p["repeats"]), unit="repeat",
                              delay=0) as bar:
                out = ringbench.bench(p, model, stores, torch.device("cpu"), seed, progress=lambda _: bar.update(1))
            cold = stores["storage"][0]
            cold.drop_cache()
            out["page_cache_bytes_after_drop"] = ringbench.resident_bytes(path)
            out["file_bytes"] = path.stat().st_size
            for store, _ in stores.values():
                store.close()
        out.update(params=p, load_average_before=before, load_average_after=ringbench.load_average(),
                   section_bytes=stores["storage"][0].layout.stride)
        return out

    def _elastic(self, cfg: DictConfig, data: MarkovTokens, seed: int, log: LogFn) -> dict[str, Any]:
        from replications.moesys import elastic, elastic_run

        e, m = cfg.paper.protocol.elastic, cfg.model
        params = {"seed": seed, "steps": e.steps, "global_batch": e.global_batch, "seq_len": e.seq_len,
                  "ckpt_every": e.ckpt_every, "step_sleep": e.step_sleep,
                  "model": {k: _plain(m[k]) for k in ("d_model", "heads", "layers", "ffn_hidden", "num_experts",
                                                     "lr", "aux_weight", "gate", "gate_options")},
                  "data": {"vocab": data.vocab, "branching": data.branching, "chain_seed": data.chain_seed}}
        if e.scenario == "single":  # scale=smoke: the same loop in this process, no torchrun
            rows = elastic.train({**params, "step_sleep": 0.0})
            out = {"scenario": "single", "curve": rows, "reference_loss": [r["loss"] for r in rows],
                   "phases": [1], "events": [], "max_abs_diff": 0.0, "resumes": []}
        else:
            with tempfile.TemporaryDirectory(prefix="moesys-elastic-") as tmp:
                out = elastic_run.run(params, Path(tmp), e.leave_at, e.rejoin_at, e.max_restarts, e.timeout)
            out["scenario"] = "leave_rejoin"
        for r in out["curve"]:
            log({"train/loss": r["loss"], "train/world": r["world"]}, r["step"])
        out.update(params=params, chain_entropy=data.entropy, uniform_loss=math.log(data.vocab))
        return out

    def evaluate(self, run: Run, model: dict[str, Any], data: MarkovTokens, seed: int,
                 summary: dict[str, Any]) -> dict[str, float]:
        from replications.moesys.measures import paired_ratios

        s = summary
        if run.cfg.model.name == "ring_memory":
            head = s["settings"][0]["rows"]
            by = {(r["storage"], r["k"]): r for r in head}
            ks = [k for k in run.cfg.paper.protocol.ring.ks if k > 1]
            best = max(by["storage", k]["tokens_per_s"] for k in ks)
            paired = paired_ratios(head)
            out = {"test_exact_vs_resident": float(s["exact"]),
                   "test_ring_k2_speedup_vs_load_then_compute": statistics.median(paired),
                   "ring_k2_faster_in_every_repeat": float(all(x > 1 for x in paired)),
                   "repeats": float(len(paired)),
                   "test_best_ring_fraction_of_resident": best / by[None, None]["tokens_per_s"],
                   "test_read_gb_per_s": by["storage", 1]["read_gb_per_s"]}
            for (storage, k), r in by.items():
                name = "resident" if k is None else f"{storage}_k{k}"
                out[f"tokens_per_s_{name}"] = r["tokens_per_s"]
                if r["modelled_tokens_per_s"] is not None:
                    out[f"modelled_tokens_per_s_{name}"] = r["modelled_tokens_per_s"]
            return out
        curve = s["curve"]
        return {"test_max_abs_loss_diff_vs_uninterrupted": s["max_abs_diff"],
                "test_world_size_changes": float(len(s["phases"]) - 1),
                "test_final_loss": curve[-1]["loss"], "first_loss": curve[0]["loss"],
                "chain_entropy": s["chain_entropy"], "uniform_loss": s["uniform_loss"]}

    def report(self, results: PaperResults) -> PaperReport | None:
        from replications.moesys import report

        return report.build(results)


REPLICATION = MoESysReplication()
