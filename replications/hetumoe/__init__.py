"""HetuMoE (Nie et al., arXiv 2203.14685): hierarchical vs flat all-to-all on an emulated multi-node cluster.

The measurement protocol through the suite's one interface: load_data = the topology (N nodes x G ranks)
and the sweep (link rates x per-rank sizes); build_model = which all-to-all (flat | hierarchical);
train = one round of measurement (a fresh cluster per link rate, replications.moe.comm_worker);
evaluate = median milliseconds per (rate, size), named a2a_ms_r<rate>_<size>. report() returns the
flat-vs-hierarchical table, the claim check and the plot as data (replications/hetumoe/report.py).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared import progress
from shared.replication import LogFn, Replication, Run
from shared.report.paper_hook import PaperReport, PaperResults

OPS = {"hierarchical": "hier", "flat": "flat"}


def size_label(b: int) -> str:
    return f"{b // 2**20}MiB" if b >= 2**20 else f"{b // 2**10}KiB"


def metric_name(rate: float, size: int) -> str:
    return f"a2a_ms_r{rate:g}_{size_label(size)}"


@dataclass
class Sweep:
    nodes: int
    ranks_per_node: int
    rates_mbit: list[float]
    sizes: list[int]
    reps: int
    cluster: str


class HetuMoEReplication(Replication):
    name = "hetumoe"
    paper_file = Path(__file__).with_name("paper.yaml")

    def load_data(self, run: Run) -> Sweep:
        p, d = run.cfg.paper.protocol, run.cfg.dataset
        if "nodes" not in d:
            raise ValueError(f"hetumoe's datasets are topologies (testbed_2x2, testbed_2x4), got '{d.name}'")
        if p.cluster not in ("emulated", "local"):
            raise ValueError(f"paper.protocol.cluster must be 'emulated' or 'local', got '{p.cluster}'")
        if p.reps < 5:
            raise ValueError(f"paper.protocol.reps must be >= 5 (median of at least 5), got {p.reps}")
        if p.cluster == "emulated":
            from replications.moe.testbed import testbed_unavailable_reason

            reason = testbed_unavailable_reason()
            if reason:
                raise RuntimeError(f"hetumoe's protocol needs the emulated cluster: {reason} "
                                   "(scale=smoke runs on local ranks instead)")
        return Sweep(int(d.nodes), int(d.ranks_per_node), [float(r) for r in p.rates_mbit],
                     [int(s) for s in p.sizes], int(p.reps), str(p.cluster))

    def build_model(self, run: Run, data: Sweep) -> str:
        a2a = run.cfg.model.a2a
        if a2a not in OPS:
            raise ValueError(f"model.a2a must be one of {sorted(OPS)}, got '{a2a}'")
        return OPS[a2a]

    def train(self, run: Run, model: str, data: Sweep, seed: int, log: LogFn) -> dict[str, Any]:
        from replications.moe.bench_comm import gflops_probe
        from replications.moe.testbed import EmulatedCluster, LocalCluster

        medians: dict[str, float] = {}
        summary: dict[str, Any] = {"gflops_probe": [], "load_average": [], "min_ms": {}, "max_ms": {},
                                   "_median_ms": medians}
        args = ["--sizes", ",".join(map(str, data.sizes)), "--reps", data.reps, "--ops", model]
        # one cluster run per link rate, minutes each: the bar shows from the start (delay=0)
        for rate in progress.bar(data.rates_mbit, desc=f"{model} all-to-all rates", unit="rate", delay=0):
            summary["gflops_probe"].append(gflops_probe())
            if data.cluster == "emulated":
                cluster = EmulatedCluster(data.nodes, data.ranks_per_node, inter_rate_mbit=rate)
            else:
                cluster = LocalCluster(data.nodes, data.ranks_per_node)
            with cluster:
                out = cluster.run("replications.moe.comm_worker", args, timeout_s=900)
            for r in out[0]["rows"]:
                if r["op"] != model:
                    continue
                name = metric_name(rate, r["bytes"])
                medians[name] = statistics.median(r["seconds"]) * 1e3
                summary["min_ms"][name] = min(r["seconds"]) * 1e3
                summary["max_ms"][name] = max(r["seconds"]) * 1e3
                summary["load_average"].append(r["load_average"][0])
        summary["cluster"] = data.cluster
        return summary

    def evaluate(self, run: Run, model: str, data: Sweep, seed: int, summary: dict[str, Any]) -> dict[str, float]:
        return dict(summary["_median_ms"])

    def report(self, results: PaperResults) -> PaperReport | None:
        from replications.hetumoe import report

        return report.build(results)


REPLICATION = HetuMoEReplication()
