"""PSHGCN's page as data (``build``): the speed benchmark (side file ``benchmark.json``, written by ``python -m
replications.pshgcn.bench --out DIR``) beside the protocol's epochs per seed and wall time from the records, and each
official-code record (make official-pshgcn) seed by seed against the suite's PSHGCN. The claims are paper.yaml's,
judged by shared.claims.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shared.claims import paper_claims
from shared.official import compare
from shared.records import OFFICIAL_NAME
from shared.report.blocks import commit_text, minutes, official_runs, official_source
from shared.report.paper_hook import Claim, PaperReport, PaperResults, Table

PAPER_FILE = Path(__file__).with_name("paper.yaml")
METRICS = ("test_micro_f1", "test_macro_f1")  # the ones the official hgb/main.py prints
TITLE = "# PSHGCN: spectral heterogeneous graph convolutions against RGCN and R-SAGE"
INTRO = ("HGB node classification (DBLP, ACM, IMDB) and AMiner, the official protocol (paper.yaml notes): seeds 1-5, "
         "validation = 20% of the training labels, test F1 at the epoch of lowest validation loss. RESULTS.md compares "
         "each number with its reference.")


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
    return Table(["dataset", "model", "s / epoch", "peak memory (MB)", "epochs per seed (protocol)", "protocol wall time"],
                 [[r["dataset"], r["model"], f"{r['seconds_per_epoch']:.3f}", f"{r['peak_memory_mb']:.0f}",
                   f"{r['protocol_epochs_mean']:.0f}" if r["protocol_epochs_mean"] else "—",
                   minutes(r["protocol_wall_seconds"]) if r["protocol_wall_seconds"] else "—"] for r in data])


def seed_cost(run: dict[str, Any]) -> str:
    """An official seed's wall time and, where its record has it, its CPU time (user + system)."""
    if not run.get("wall_seconds"):
        return "—"
    cpu = run.get("cpu_seconds")
    return minutes(run["wall_seconds"]) + (f" ({minutes(cpu)})" if cpu else "")


def total_cost(runs: list[dict[str, Any]]) -> str:
    """The seeds' wall (and CPU) time summed; CPU only when every seed recorded it."""
    if not runs or not all(r.get("wall_seconds") for r in runs):
        return "—"
    cpu = [r.get("cpu_seconds") for r in runs]
    return "all seeds: " + seed_cost({"wall_seconds": sum(r["wall_seconds"] for r in runs),
                                      "cpu_seconds": sum(cpu) if all(cpu) else None})


def official_table(dataset: str, official: dict[str, Any], suite: dict[str, Any],
                   status: dict[str, str]) -> tuple[Table, dict[str, Any]]:
    """The official code's record against the suite's PSHGCN seed by seed (seed s = the official seed s: the same
    validation split and the RNG draws in hgb/main.py's order, paper.yaml notes), per metric; ``status``: the
    matches_official_<metric> verdicts."""
    pairs = {m: compare.paired(official, suite, m) for m in METRICS}
    cost = {int(r["seed"]): r for r in official.get("runs", [])}
    rows = [[s, *(f"{p['official'][i]:.4f} / {p['suite'][i]:.4f} ({p['differences'][i]:+.4f})"
                  for p in pairs.values()), seed_cost(cost.get(int(s), {}))]
            for i, s in enumerate(pairs[METRICS[0]]["seeds"])]
    summary = ["paired mean [95% CI]", *(
        f"{p['mean_difference']:+.4f} [{p['ci95'][0]:+.4f}, {p['ci95'][1]:+.4f}]: {status.get(m, '–')}"
        if p.get("ci95") else "–" for m, p in pairs.items()), total_cost(list(cost.values()))]
    note = (f"results/pshgcn/{dataset}/{OFFICIAL_NAME}: `make official-pshgcn dataset={dataset}`, "
            f"{official_source(official)} with patches "
            + ", ".join(p["path"].rsplit("/", 1)[-1] for p in official.get("patches") or [])
            + ". The official code prints 4 decimals. Supported: the whole interval of suite - official within "
              "±tolerance (paper.yaml claims matches_official_*); contradicted: wholly outside.")
    table = Table(["seed", *(f"{m}: official / suite (suite - official)" for m in METRICS), "official code: wall (CPU)"],
                  [*rows, summary], note=note)
    return table, {m: {**p, "status": status.get(m)} for m, p in pairs.items()}


def official_part(results: PaperResults, claims: list[Claim]) -> tuple[list[Any], dict[str, Any]]:
    """One seed-by-seed table per dataset that has an official-code record and a suite PSHGCN record."""
    blocks: list[Any] = []
    data: dict[str, Any] = {}
    for dataset, official, suite in official_runs(results, "pshgcn"):
        status = {m: c.status for m in METRICS for c in claims if c.id == f"matches_official_{m[5:]}" and c.dataset == dataset}
        table, data[dataset] = official_table(dataset, official, suite, status)
        blocks += [f"## {dataset}: the official code, seed by seed", table]
    return blocks, data


def bench_blocks(bench: dict[str, Any], results: PaperResults) -> tuple[list[Any], dict[str, Any]]:
    """The speed benchmark beside the protocol's epochs and wall time, and its data."""
    data = rows(bench, results)
    env, load = bench["environment"], bench["load_average_1min"]
    hw = env["hardware"]
    seeds = sorted({r["protocol_seeds"] for r in data if r["protocol_seeds"]})
    intro = (f"`make bench-pshgcn` on {hw['cpu']} ({hw['cpu_count']} cores, {hw['torch_threads']} torch threads), "
             f"torch {env['versions'].get('torch')}, {commit_text(env)}; 1-minute load average {load['before']} before, "
             f"{load['after']} after (2 = both cores busy).\n"
             f"Seconds per epoch = one training step plus the validation pass, averaged over {bench['epochs_timed']} "
             "epochs (first epoch included). Peak memory = the process's maximum resident set. The protocol columns "
             f"come from the protocol's result records ({'/'.join(map(str, seeds)) or 'no'} seeds, early stopping).")
    return ["## Benchmark", intro, table(data)], {"benchmark": data, "epochs_timed": bench["epochs_timed"],
                                                  "load_average_1min": load}


def build(results: PaperResults) -> PaperReport | None:
    """The verdicts, the benchmark and the official-code tables, whichever exist (None: none of them)."""
    bench = results.side_file("benchmark.json")
    if not results.records and bench is None:
        return None
    claims = paper_claims(PAPER_FILE, results)
    blocks, data = bench_blocks(bench, results) if bench is not None else ([], {})
    official_blocks, official = official_part(results, claims)
    return PaperReport(blocks=[TITLE, INTRO, *blocks, *official_blocks], claims=claims, data={**data, "official": official})
