"""HetuMoE's page as data: the flat vs hierarchical table and the plot (``build``); the claims are paper.yaml's specs
judged by shared.claims (the H-A2A direction from measures.py's per-round speed-ups). Speedup = flat / hierarchical
time, paired by seed (one seed = one measurement round). No paper number is compared: none is known.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replications.hetumoe.measures import compare, topologies
from shared.claims import paper_claims
from shared.report.figures import Panel, Plot, Rule, Series, draw
from shared.report.paper_hook import Figure, PaperReport, PaperResults, Table

PAPER = Path(__file__).with_name("paper.yaml")


def _size(b: int) -> str:
    return f"{b // 2**20} MiB" if b >= 2**20 else f"{b // 2**10} KiB"


def tables(all_rows: dict[str, list[dict[str, Any]]]) -> list[Table]:
    header = ["link (Mbit/s)", "per-rank size", "flat (ms)", "H-A2A (ms)", "speedup (flat / H-A2A)"]
    return [Table(header, [[f"{r['rate_mbit']:g}", _size(r["bytes"]), f"{r['flat_ms']:.2f}", f"{r['hier_ms']:.2f}",
                            f"{r['speedup_mean']:.2f}x ({min(r['speedups']):.2f}-{max(r['speedups']):.2f})"]
                           for r in rows], title=topo)
            for topo, rows in all_rows.items()]


def plot(all_rows: dict[str, list[dict[str, Any]]]) -> Plot:
    def panel(topo: str, rows: list[dict[str, Any]]) -> Panel:
        series = []
        for rate in sorted({r["rate_mbit"] for r in rows}):
            pts = [r for r in rows if r["rate_mbit"] == rate]
            series.append(Series(f"{rate:g} Mbit/s", [r["bytes"] for r in pts], [r["speedup_mean"] for r in pts], "-o", ms=4,
                                 band=([min(r["speedups"]) for r in pts], [max(r["speedups"]) for r in pts])))
        return Panel(topo, "per-rank bytes", "flat / H-A2A time (>1: H-A2A faster)", series,
                     hlines=[Rule(1.0, color="k", style="--")], log_x=True, grid=True)

    return Plot([panel(topo, rows) for topo, rows in all_rows.items()], panel_size=(5, 3.8))


def build(results: PaperResults) -> PaperReport | None:
    """The page from every topology with both a flat and a hierarchical record; None without such a pair."""
    pairs = topologies(results)
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
              Figure("a2a.png", draw=lambda: draw(plot(all_rows)), caption="flat vs H-A2A", dpi=100)]
    return PaperReport(blocks=blocks, claims=paper_claims(PAPER, results),
                       data={"rows": all_rows, "cluster": sorted(cluster), "seeds": seeds, "commits": commits})
