"""``python -m replications.hetumoe.report [results_dir]``: flat vs hierarchical table, claim check, plot.

Reads results/hetumoe/<topology>/{hetumoe,hetumoe_flat}.json and writes results/hetumoe/TABLE.md,
claim.json and a2a.png. Speedup = flat / hierarchical time, paired by seed (one seed = one measurement
round). The testable claim (paper.yaml `claims`, the H-A2A mechanism) is checked as a direction at the
smallest per-rank size: `supported` when H-A2A was faster in every round on every shaped link,
`contradicted` when slower in every round, else `inconclusive`; the system-level speedups are `not
testable here`, with the reason from paper.yaml. No paper number is compared: none is known.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

from shared.atomic import save_figure_atomic, write_json_atomic, write_text_atomic

ROOT = Path(__file__).resolve().parents[2] / "results"
PAPER = Path(__file__).with_name("paper.yaml")
METRIC = re.compile(r"^a2a_ms_r(?P<rate>[\d.]+)_(?P<size>\d+)(?P<unit>KiB|MiB)$")


def _bytes(m: re.Match) -> int:
    return int(m["size"]) * (2**10 if m["unit"] == "KiB" else 2**20)


def load(root: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """topology -> model -> complete result record."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for path in sorted((root / "hetumoe").glob("*/*.json")):
        if path.name.endswith(".partial.json"):
            continue
        record = json.loads(path.read_text())
        if record.get("complete", True):
            out.setdefault(record["dataset"], {})[record["model"]] = record
    return out


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
    smallest = min(r["bytes"] for r in rows)
    sp = [s for r in rows if r["bytes"] == smallest for s in r["speedups"]]
    return "supported" if all(s > 1 for s in sp) else "contradicted" if all(s < 1 for s in sp) else "inconclusive"


def claim_check(all_rows: dict[str, list[dict[str, Any]]], cluster: set[str]) -> list[dict[str, Any]]:
    paper = yaml.safe_load(PAPER.read_text())
    out = []
    for claim in paper["claims"]:
        entry = {"text": claim["text"], "kind": claim["kind"], "source": claim["source"],
                 "verified": claim["verified"], "values": claim.get("values")}
        if not claim.get("testable_here"):
            out.append({**entry, "status": "not testable here", "why": claim["why_not"]})
            continue
        if cluster != {"emulated"} or not all_rows:
            out.append({**entry, "status": "not tested", "why": "no measurement on the emulated (shaped) cluster"})
            continue
        per_topo = {t: direction(rows) for t, rows in all_rows.items()}
        values = set(per_topo.values())
        status = values.pop() if len(values) == 1 else "inconclusive"
        out.append({**entry, "status": f"direction {status}" if status != "inconclusive" else "inconclusive",
                    "tested_as": claim["tested_as"], "per_topology": per_topo})
    return out


def _size(b: int) -> str:
    return f"{b // 2**20} MiB" if b >= 2**20 else f"{b // 2**10} KiB"


def table(all_rows: dict[str, list[dict[str, Any]]], claims: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = ["# HetuMoE: hierarchical vs flat all-to-all (emulated cluster)", "",
             f"`python -m replications.replicate hetumoe` (cluster: {', '.join(sorted(meta['cluster']))}; "
             f"seeds = measurement rounds: {meta['seeds']}; commit {meta['commit']}, dirty: {meta['dirty']}). "
             "Mean over rounds of each round's median of 5 timed repetitions; speedup = flat / H-A2A per round "
             "(min-max over rounds). Communication only; 4-8 gloo processes share 2 cores.", ""]
    for topo, rows in all_rows.items():
        lines += [f"## {topo}", "", "| link (Mbit/s) | per-rank size | flat (ms) | H-A2A (ms) | speedup (flat / H-A2A) |",
                  "|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['rate_mbit']:g} | {_size(r['bytes'])} | {r['flat_ms']:.2f} | {r['hier_ms']:.2f} | "
                         f"{r['speedup_mean']:.2f}x ({min(r['speedups']):.2f}-{max(r['speedups']):.2f}) |")
        lines.append("")
    lines += ["## The paper's claims", "", "| claim | source | verified | status |", "|---|---|---|---|"]
    for c in claims:
        why = c.get("why") or c.get("tested_as", "")
        lines.append(f"| {c['text']} | {c['source']} | {'yes' if c['verified'] else 'no'} | **{c['status']}**: {why} |")
    lines += ["", "The model's extrapolation to GPU-cluster hardware (assumed, not measured) is in "
              "[results/moe/COMM_BENCHMARK.md](../moe/COMM_BENCHMARK.md).", "", "![flat vs H-A2A](a2a.png)", ""]
    return "\n".join(lines)


def plot(all_rows: dict[str, list[dict[str, Any]]], out: Path) -> None:
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
    save_figure_atomic(fig, out, dpi=100)


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else ROOT
    records = load(root)
    pairs = {t: r for t, r in sorted(records.items()) if {"hetumoe", "hetumoe_flat"} <= set(r)}
    if not pairs:
        print(f"no complete hetumoe flat + hierarchical pair under {root / 'hetumoe'}", file=sys.stderr)
        return 1
    all_rows = {t: compare(r) for t, r in pairs.items()}
    runs = [run for r in pairs.values() for rec in r.values() for run in rec["runs"]]
    meta = {"cluster": {run["train"]["cluster"] for run in runs},
            "seeds": sorted({run["seed"] for run in runs}),
            "commit": ", ".join(sorted({(run["git_commit"] or "?")[:10] for run in runs})),
            "dirty": any(rec["environment"]["git_dirty"] for r in pairs.values() for rec in r.values())}
    claims = claim_check(all_rows, meta["cluster"])
    out = root / "hetumoe"
    write_text_atomic(out / "TABLE.md", table(all_rows, claims, meta))
    write_json_atomic(out / "claim.json", {"claims": claims, "rows": all_rows,
                                           "meta": {**meta, "cluster": sorted(meta["cluster"])}})
    plot(all_rows, out / "a2a.png")
    print((out / "TABLE.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
