"""HetuMoE's page as data: the flat vs hierarchical table, the claim check and the plot (``build``).

Speedup = flat / hierarchical time, paired by seed (one seed = one measurement round). The testable claim
(paper.yaml `claims`, the H-A2A mechanism) is a direction at the smallest per-rank size, judged by
shared.verdict.sign_status over every round on every shaped link; the system-level speedups are `not
testable here`, with the reason from paper.yaml. No paper number is compared: none is known.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from shared.paper_report import Claim, Figure, PaperReport, PaperResults, Table
from shared.verdict import INCONCLUSIVE, NOT_RUN, NOT_TESTABLE, sign_status

PAPER = Path(__file__).with_name("paper.yaml")
METRIC = re.compile(r"^a2a_ms_r(?P<rate>[\d.]+)_(?P<size>\d+)(?P<unit>KiB|MiB)$")


def _bytes(m: re.Match) -> int:
    return int(m["size"]) * (2**10 if m["unit"] == "KiB" else 2**20)


def compare(records: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (rate, size): each model's mean ms and the per-seed speedups flat / hierarchical."""
    hier, flat = records["hetumoe"], records["hetumoe_flat"]
    h_runs = {r["seed"]: r["metrics"] for r in hier["runs"]}
    f_runs = {r["seed"]: r["metrics"] for r in flat["runs"]}
    seeds = sorted(set(h_runs) & set(f_runs))
    rows = []
    for metric in hier["aggregate"]:
        m = METRIC.match(metric)
        if not m or metric not in flat["aggregate"]:
            continue
        speedups = [f_runs[s][metric] / h_runs[s][metric] for s in seeds]
        rows.append({"metric": metric, "rate_mbit": float(m["rate"]), "bytes": _bytes(m), "seeds": seeds,
                     "flat_ms": flat["aggregate"][metric]["mean"], "hier_ms": hier["aggregate"][metric]["mean"],
                     "speedups": speedups, "speedup_mean": sum(speedups) / len(speedups)})
    return sorted(rows, key=lambda r: (r["rate_mbit"], r["bytes"]))


def direction(rows: list[dict[str, Any]]) -> str:
    """Every round's speedup at the smallest size: H-A2A faster (> 1) in all of them, slower in all, or neither."""
    smallest = min(r["bytes"] for r in rows)
    return sign_status([s - 1 for r in rows if r["bytes"] == smallest for s in r["speedups"]])


def claim_check(all_rows: dict[str, list[dict[str, Any]]], cluster: set[str]) -> list[Claim]:
    paper = yaml.safe_load(PAPER.read_text())
    out = []
    for claim in paper["claims"]:
        base = {"text": claim["text"], "kind": claim["kind"], "source": claim["source"], "verified": claim["verified"]}
        if not claim.get("testable_here"):
            out.append(Claim(**base, status=NOT_TESTABLE, evidence=claim["why_not"]))
            continue
        if cluster != {"emulated"} or not all_rows:
            out.append(Claim(**base, status=NOT_RUN, evidence="no measurement on the emulated (shaped) cluster"))
            continue
        per_topo = {t: direction(rows) for t, rows in all_rows.items()}
        values = set(per_topo.values())
        status = values.pop() if len(values) == 1 else INCONCLUSIVE
        effects = [s for rows in all_rows.values() for r in rows if r["bytes"] == min(x["bytes"] for x in rows)
                   for s in r["speedups"]]
        evidence = (f"{claim['tested_as']}; flat / H-A2A at the smallest size {min(effects):.2f}-{max(effects):.2f}x "
                    f"over rounds ({', '.join(f'{t}: {v}' for t, v in per_topo.items())})")
        out.append(Claim(**base, status=status, evidence=evidence, unit="x (flat / H-A2A)",
                         effect=sum(effects) / len(effects), interval=(min(effects), max(effects))))
    return out


def _size(b: int) -> str:
    return f"{b // 2**20} MiB" if b >= 2**20 else f"{b // 2**10} KiB"


def tables(all_rows: dict[str, list[dict[str, Any]]]) -> list[Table]:
    header = ["link (Mbit/s)", "per-rank size", "flat (ms)", "H-A2A (ms)", "speedup (flat / H-A2A)"]
    return [Table(header, [[f"{r['rate_mbit']:g}", _size(r["bytes"]), f"{r['flat_ms']:.2f}", f"{r['hier_ms']:.2f}",
                            f"{r['speedup_mean']:.2f}x ({min(r['speedups']):.2f}-{max(r['speedups']):.2f})"]
                           for r in rows], title=topo)
            for topo, rows in all_rows.items()]


def plot(all_rows: dict[str, list[dict[str, Any]]]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(all_rows), figsize=(5 * len(all_rows), 3.8), squeeze=False)
    for ax, (topo, rows) in zip(axes[0], all_rows.items()):
        for rate in sorted({r["rate_mbit"] for r in rows}):
            pts = [r for r in rows if r["rate_mbit"] == rate]
            b = [r["bytes"] for r in pts]
            ax.plot(b, [r["speedup_mean"] for r in pts], "-o", ms=4, label=f"{rate:g} Mbit/s")
            ax.fill_between(b, [min(r["speedups"]) for r in pts], [max(r["speedups"]) for r in pts], alpha=0.2)
        ax.axhline(1.0, color="k", lw=0.8, ls="--")
        ax.set(xscale="log", xlabel="per-rank bytes", ylabel="flat / H-A2A time (>1: H-A2A faster)", title=topo)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def build(results: PaperResults) -> PaperReport | None:
    """The page from every topology with both a flat and a hierarchical record; None without such a pair."""
    pairs = {t: results.models(t) for t in results.datasets()
             if {"hetumoe", "hetumoe_flat"} <= set(results.models(t))}
    if not pairs:
        return None
    all_rows = {t: compare(r) for t, r in pairs.items()}
    runs = [run for r in pairs.values() for rec in r.values() for run in rec["runs"]]
    cluster = {run["train"]["cluster"] for run in runs}
    seeds = sorted({run["seed"] for run in runs})
    commits = ", ".join(sorted({(run["git_commit"] or "?")[:10] for run in runs}))
    dirty = any(rec["environment"]["git_dirty"] for r in pairs.values() for rec in r.values())
    intro = (f"`python -m replications.replicate hetumoe` (cluster: {', '.join(sorted(cluster))}; seeds = measurement "
             f"rounds: {seeds}; commit {commits}, dirty: {dirty}). Mean over rounds of each round's median of 5 timed "
             "repetitions; speedup = flat / H-A2A per round (min-max over rounds). Communication only; 4-8 gloo "
             "processes share 2 cores.")
    blocks = ["# HetuMoE: hierarchical vs flat all-to-all (emulated cluster)", intro, *tables(all_rows),
              "The model's extrapolation to GPU-cluster hardware (assumed, not measured) is in "
              "[results/moe/COMM_BENCHMARK.md](../moe/COMM_BENCHMARK.md).",
              Figure("a2a.png", draw=lambda: plot(all_rows), caption="flat vs H-A2A", dpi=100)]
    return PaperReport(blocks=blocks, claims=claim_check(all_rows, cluster),
                       data={"rows": all_rows, "cluster": sorted(cluster), "seeds": seeds, "commits": commits})
