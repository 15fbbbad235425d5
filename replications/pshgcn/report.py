"""PSHGCN's page as data (``build``): the speed benchmark (side file ``benchmark.json``, written by
``python -m replications.pshgcn.bench --out DIR``) beside the protocol's epochs per seed and wall time, taken
from the result records. paper.yaml holds no claim beyond its table numbers, which the shared per-metric page
(RESULTS.md) compares; without a benchmark the paper has no page of its own (None).
"""

from __future__ import annotations

from typing import Any

from shared.paper_report import PaperReport, PaperResults, Table


def protocol(results: PaperResults, dataset: str, model: str) -> dict[str, Any]:
    """Mean epochs per seed and wall seconds of the protocol's record (None when there is no record)."""
    record = results.record(dataset, model)
    if record is None:
        return {"protocol_epochs_mean": None, "protocol_wall_seconds": None, "protocol_seeds": None}
    runs = record["runs"]
    return {"protocol_epochs_mean": sum(r["train"]["epochs_run"] for r in runs) / len(runs),
            "protocol_wall_seconds": record["wall_seconds"], "protocol_seeds": len(runs)}


def rows(bench: dict[str, Any], results: PaperResults) -> list[dict[str, Any]]:
    keep = ("dataset", "model", "seconds_per_epoch", "peak_memory_mb")
    return [{**{k: r[k] for k in keep}, **protocol(results, r["dataset"], r["model"])} for r in bench["rows"]]


def table(data: list[dict[str, Any]]) -> Table:
    def wall(r: dict[str, Any]) -> str:
        return f"{r['protocol_wall_seconds'] / 60:.1f} min" if r["protocol_wall_seconds"] else "—"

    return Table(["dataset", "model", "s / epoch", "peak memory (MB)", "epochs per seed (protocol)",
                  "protocol wall time"],
                 [[r["dataset"], r["model"], f"{r['seconds_per_epoch']:.3f}", f"{r['peak_memory_mb']:.0f}",
                   f"{r['protocol_epochs_mean']:.0f}" if r["protocol_epochs_mean"] else "—", wall(r)] for r in data])


def build(results: PaperResults) -> PaperReport | None:
    bench = results.side_file("benchmark.json")
    if bench is None:
        return None
    data = rows(bench, results)
    env, load = bench["environment"], bench["load_average_1min"]
    hw = env["hardware"]
    seeds = sorted({r["protocol_seeds"] for r in data if r["protocol_seeds"]})
    intro = (f"`make bench-pshgcn` on {hw['cpu']} ({hw['cpu_count']} cores, {hw['torch_threads']} torch threads), "
             f"torch {env['versions'].get('torch')}, commit {str(env['git_commit'])[:10]}"
             f"{' (dirty tree)' if env['git_dirty'] else ''}; 1-minute load average {load['before']} before, "
             f"{load['after']} after (2 = both cores busy).\n"
             f"Seconds per epoch = one training step plus the validation pass, averaged over {bench['epochs_timed']} "
             "epochs (first epoch included). Peak memory = the process's maximum resident set. The protocol columns "
             f"come from the protocol's result records ({'/'.join(map(str, seeds)) or 'no'} seeds, early stopping).")
    return PaperReport(blocks=["# PSHGCN benchmark", intro, table(data)],
                       data={"benchmark": data, "epochs_timed": bench["epochs_timed"], "load_average_1min": load})
