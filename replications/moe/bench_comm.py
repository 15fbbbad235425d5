"""Flat vs hierarchical all-to-all on the emulated cluster, and the α–β model fitted to it.

    python -m replications.moe.bench_comm [--topologies 2x2,2x4] [--rates 100,400,2000] [--reps 5]
    make bench-moe-comm ARGS="..."          # runs alone among the project's benchmarks (shared.exclusive lock)

For every topology (N nodes x G ranks) and inter-node rate (Mbit/s, tc tbf; `none` = unshaped veths) one
cluster runs `replications.moe.comm_worker` over the per-rank sizes (1 KiB - 8 MiB): flat all-to-all,
H-A2A (total, network phases, layout copies) and intra/inter-node ping-pong, >= 5 repetitions each
(median, min, max, the load average). A 1-thread matmul probe before and after each cluster records how
much CPU the shared machine left us. Only communication is timed: 4-8 processes on 2 cores make compute
timings meaningless. The α–β model (costmodel.py) is fitted on the p2p and flat medians only; H-A2A's
network time is then predicted out of sample. Writes results/moe/comm_benchmark.{json,md,png}.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import torch

from replications.moe.costmodel import CostModel, fit
from replications.moe.testbed import EmulatedCluster, _burst_kbit, testbed_unavailable_reason
from shared.atomic import save_figure_atomic, write_json_atomic, write_text_atomic
from shared.exclusive import exclusive
from shared.paths import HAND_RUNS
from shared.runinfo import environment, git_state

SIZES = [2**10, 2**12, 2**14, 2**16, 2**18, 2**20, 2**22, 2**23]  # 1 KiB .. 8 MiB per rank
FIT_OPS = ("p2p_intra", "p2p_inter", "flat")
# Model extrapolation, NOT measured: a HetuMoE-like commodity cluster (Hetu's run_2node_comm.sh: 2 nodes x
# 8 GPUs, one NIC per node, NCCL over sockets). Every value is an assumption, stated in the report.
ASSUMED = {
    "label": "assumed hardware (not measured): 8 GPUs per node on PCIe/NVLink, one 10 GbE NIC per node",
    "alpha_intra": 5e-6, "beta_intra": 1 / 50e9, "alpha_inter": 50e-6, "beta_inter": 8 / 10e9,
    "topologies": [(2, 8), (4, 8), (8, 8)],
}


def gflops_probe(seconds: float = 0.3) -> float:
    """1-thread fp32 matmul rate right now (what the shared machine leaves us)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        a @ b
        n += 1
    torch.set_num_threads(threads)
    return n * 2 * 256**3 / (time.perf_counter() - start) / 1e9


def link_key(rate: float | None) -> str:
    return "unshaped" if rate is None else f"{rate:g}"


def measure(topologies: list[tuple[int, int]], rates: list[float | None], sizes: list[int], reps: int,
            progress=print) -> list[dict]:
    rows = []
    for N, G in topologies:
        for rate in rates:
            before = gflops_probe()
            start = time.perf_counter()
            with EmulatedCluster(N, G, inter_rate_mbit=rate) as cluster:
                out = cluster.run("replications.moe.comm_worker",
                                  ["--sizes", ",".join(map(str, sizes)), "--reps", reps], timeout_s=900)
            after = gflops_probe()
            progress(f"N={N} G={G} rate={link_key(rate)}: {time.perf_counter() - start:.0f} s "
                     f"(matmul probe {before:.1f} -> {after:.1f} GFLOP/s, load {os.getloadavg()[0]:.1f})")
            for r in out[0]["rows"]:
                s = r["seconds"]
                rows.append({"N": N, "G": G, "link": link_key(rate), "rate_mbit": rate, "op": r["op"],
                             "bytes": r["bytes"], "seconds": statistics.median(s), "min": min(s), "max": max(s),
                             "reps": len(s), "all": s, "load_average": r["load_average"],
                             "gflops_before": before, "gflops_after": after})
    return rows


def crossover_measured(rows: list[dict], N: int, G: int, link: str, op: str = "hier") -> dict:
    """Sizes where H-A2A (`op`: hier = total, hier_net = network phases) beat flat, and the crossing
    point interpolated in log-size between the last winning and first losing size."""
    med = {(r["op"], r["bytes"]): r["seconds"] for r in rows if (r["N"], r["G"], r["link"]) == (N, G, link)}
    sizes = sorted(b for o, b in med if o == "flat" and (op, b) in med)
    ratio = {b: med[("flat", b)] / med[(op, b)] for b in sizes}  # > 1: H-A2A faster
    wins = [b for b in sizes if ratio[b] > 1]
    cross = None
    for lo, hi in zip(sizes, sizes[1:]):
        if ratio[lo] > 1 >= ratio[hi]:
            t = math.log(ratio[lo]) / (math.log(ratio[lo]) - math.log(ratio[hi]))
            cross = 2 ** (math.log2(lo) + t * (math.log2(hi) - math.log2(lo)))
    return {"ratio_flat_over_hier": ratio, "hier_faster_at": wins, "crossover_bytes": cross}


def burst_bytes(rows: list[dict]) -> dict[str, float]:
    """Each shaped link's token-bucket burst (testbed.py), which passes at line rate after an idle gap."""
    return {r["link"]: (_burst_kbit(r["rate_mbit"]) * 1000 / 8 if r["rate_mbit"] else 0.0) for r in rows}


def analyse(rows: list[dict]) -> dict:
    model, fitted = fit([r for r in rows if r["op"] in FIT_OPS], burst_bytes(rows))
    predicted = []
    for r in rows:
        if r["op"] in ("hier_net", "hier"):
            p = model.predict("hier", r["N"], r["G"], r["bytes"], r["link"])
            predicted.append({**_short(r), "predicted": p, "rel_residual": p / r["seconds"] - 1})
    cells = sorted({(r["N"], r["G"], r["link"], r["rate_mbit"] or 0) for r in rows}, key=lambda c: (c[0], c[1], c[3]))
    crossings = []
    for N, G, link, _ in cells:
        crossings.append({"N": N, "G": G, "link": link, "measured_total": crossover_measured(rows, N, G, link, "hier"),
                          "measured_network": crossover_measured(rows, N, G, link, "hier_net"),
                          "predicted_bytes": model.crossover(N, G)})
    assumed = CostModel(ASSUMED["alpha_intra"], ASSUMED["beta_intra"], ASSUMED["alpha_inter"],
                        {"assumed": ASSUMED["beta_inter"]})
    extrapolation = []
    for N, G in ASSUMED["topologies"]:
        for B in (2**16, 2**20, 2**23):
            flat, hier = assumed.predict("flat", N, G, B, "assumed"), assumed.predict("hier", N, G, B, "assumed")
            extrapolation.append({"N": N, "G": G, "bytes": B, "flat_s": flat, "hier_s": hier, "speedup": flat / hier,
                                  "crossover_bytes": assumed.crossover(N, G)})
    return {"model": model.to_dict(), "fit_residuals": [{**_short(f), "predicted": f["predicted"],
                                                         "rel_residual": f["rel_residual"]} for f in fitted],
            "hier_predictions": predicted, "crossovers": crossings,
            "extrapolation": {"assumptions": ASSUMED, "rows": extrapolation}}


def _short(r: dict) -> dict:
    return {k: r[k] for k in ("N", "G", "link", "op", "bytes", "seconds")}


def _size(b: float | None) -> str:
    if b is None:
        return "never"
    if b == float("inf"):
        return "always"
    for unit, k in (("MiB", 2**20), ("KiB", 2**10)):
        if b >= 0.95 * k:
            return f"{b / k:.3g} {unit}"
    return f"{b:.3g} B"


def markdown(record: dict) -> str:
    env, a, m = record["environment"], record["analysis"], record["analysis"]["model"]
    rows = record["rows"]
    probes = [r["gflops_before"] for r in rows] + [r["gflops_after"] for r in rows]
    loads = [r["load_average"][0] for r in rows]
    lines = [
        "# Flat vs hierarchical (HetuMoE) all-to-all on the emulated cluster",
        "",
        f"`{env['command']}` at commit `{(env['git_commit'] or '?')[:10]}` (dirty: {env['git_dirty']}), "
        f"{record['wall_s']:.0f} s wall. CPU: {env['hardware']['cpu']} ({env['hardware']['cpu_count']} cores, "
        f"shared: 1-min load average {min(loads):.1f}-{max(loads):.1f} during the runs, 1-thread matmul probe "
        f"{min(probes):.1f}-{max(probes):.1f} GFLOP/s). torch {env['versions'].get('torch')}, gloo over TCP.",
        "",
        "Nodes are Linux network namespaces, one veth each into a bridge; inter-node rate shaped with tc tbf "
        "on both ends of every veth (full duplex); ranks of a node share its loopback (unshaped). No link "
        "latency can be added on this kernel (no netem), so inter-node α is the TCP stack's, like intra-node. "
        f"Per-rank bytes B = what each rank sends in all (B/W to every rank); median of {rows[0]['reps']} "
        "repetitions (min-max in the JSON), each after a barrier, slowest rank. `hier` = the whole H-A2A, "
        "`hier_net` = its network phases (the leaders' gather, exchange, scatter), without the two layout copies.",
        "",
        "## Times (ms, median)",
        "",
    ]
    cells = sorted({(r["N"], r["G"], r["link"], r["rate_mbit"] or 0) for r in rows}, key=lambda c: (c[0], c[1], c[3]))
    sizes = sorted({r["bytes"] for r in rows})
    lines.append("| N x G | link (Mbit/s) | op | " + " | ".join(_size(b) for b in sizes) + " |")
    lines.append("|---|---|---|" + "---|" * len(sizes))
    med = {(r["N"], r["G"], r["link"], r["op"], r["bytes"]): r for r in rows}
    for N, G, link, _ in cells:
        for op in ("flat", "hier", "hier_net", "p2p_intra", "p2p_inter"):
            vals = [med.get((N, G, link, op, b)) for b in sizes]
            if any(v is None for v in vals):
                continue
            lines.append(f"| {N}x{G} | {link} | {op} | " + " | ".join(f"{v['seconds'] * 1e3:.2f}" for v in vals) + " |")
    lines += [
        "",
        "## α–β model (least squares on relative error, p2p + flat medians only)",
        "",
        f"α_intra = {m['alpha_intra'] * 1e6:.1f} µs, β_intra = {m['beta_intra'] * 1e9:.3f} ns/B "
        f"({1 / m['beta_intra'] / 1e9 if m['beta_intra'] else float('inf'):.2f} GB/s), "
        f"α_inter = {m['alpha_inter'] * 1e6:.1f} µs; β_inter per link: "
        + ", ".join(f"{k}: {v * 1e9:.2f} ns/B ({8 / v / 1e6 if v else float('inf'):.0f} Mbit/s)"
                    for k, v in m["beta_inter"].items()) + ". Inter-node bytes are charged beyond each link's "
        "token-bucket burst (10 ms at the rate, min 256 kbit: "
        + ", ".join(f"{k}: {v / 1e3:.0f} kB" for k, v in m.get("burst", {}).items()) + "), which passes at line rate."
        + (f" Analysis re-run from the stored timings at commit `{record['analysis_commit'][:10]}`."
           if record.get("analysis_commit") else ""),
        "",
    ]
    res = [abs(f["rel_residual"]) for f in a["fit_residuals"]]
    hres = [abs(f["rel_residual"]) for f in a["hier_predictions"] if f["op"] == "hier_net"]
    lines += [
        f"Fit residuals |predicted/measured - 1|: median {statistics.median(res):.2f}, max {max(res):.2f} "
        f"over {len(res)} medians. Out of sample, H-A2A network phases: median {statistics.median(hres):.2f}, "
        f"max {max(hres):.2f} (every residual in the JSON).",
        "",
        "## Crossover: below which per-rank size H-A2A is faster",
        "",
        "| N x G | link | measured (whole H-A2A) | sizes where it won | measured (network phases) | predicted by the fit |",
        "|---|---|---|---|---|---|",
    ]
    for c in a["crossovers"]:
        t, n = c["measured_total"], c["measured_network"]
        won = ", ".join(_size(b) for b in t["hier_faster_at"]) or "none"
        meas = _size(t["crossover_bytes"]) if t["crossover_bytes"] else ("none" if not t["hier_faster_at"] else "beyond range")
        nmeas = _size(n["crossover_bytes"]) if n["crossover_bytes"] else ("none" if not n["hier_faster_at"] else "beyond range")
        lines.append(f"| {c['N']}x{c['G']} | {c['link']} | {meas} | {won} | {nmeas} | {_size(c['predicted_bytes'])} |")
    ex = a["extrapolation"]
    lines += [
        "",
        "## Model extrapolation (assumed hardware, not measured)",
        "",
        f"{ex['assumptions']['label']}: α_intra {ex['assumptions']['alpha_intra'] * 1e6:g} µs, intra "
        f"{1 / ex['assumptions']['beta_intra'] / 1e9:g} GB/s, α_inter {ex['assumptions']['alpha_inter'] * 1e6:g} µs, "
        f"inter {8 / ex['assumptions']['beta_inter'] / 1e9:g} Gbit/s. The model charges each of a rank's "
        "(N-1)·G inter-node messages its full α (no overlap), an upper bound on flat's latency.",
        "",
        "| N x G | per-rank B | flat (ms) | H-A2A (ms) | predicted speedup | predicted crossover |",
        "|---|---|---|---|---|---|",
    ]
    for r in ex["rows"]:
        lines.append(f"| {r['N']}x{r['G']} | {_size(r['bytes'])} | {r['flat_s'] * 1e3:.3f} | {r['hier_s'] * 1e3:.3f} | "
                     f"{r['speedup']:.2f}x | {_size(r['crossover_bytes'])} |")
    lines += ["", "![flat vs hierarchical](comm_benchmark.png)", ""]
    return "\n".join(lines)


def plot(record: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, model = record["rows"], record["analysis"]["model"]
    cm = CostModel(model["alpha_intra"], model["beta_intra"], model["alpha_inter"], model["beta_inter"])
    topos = sorted({(r["N"], r["G"]) for r in rows})
    links = sorted({(r["rate_mbit"] or 1e9, r["link"]) for r in rows})
    fig, axes = plt.subplots(1, len(topos), figsize=(5.2 * len(topos), 4.2), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (N, G) in zip(axes[0], topos):
        for i, (_, link) in enumerate(links):
            for op, style in (("flat", "-o"), ("hier", "-s")):
                pts = sorted((r["bytes"], r["seconds"], r["min"], r["max"]) for r in rows
                             if (r["N"], r["G"], r["link"], r["op"]) == (N, G, link, op))
                if not pts:
                    continue
                b, s, lo, hi = zip(*pts)
                ax.errorbar(b, [x * 1e3 for x in s], yerr=[[(x - y) * 1e3 for x, y in zip(s, lo)],
                                                           [(y - x) * 1e3 for x, y in zip(s, hi)]],
                            fmt=style, color=colors[i % len(colors)], ms=3, lw=1, capsize=2,
                            mfc="none" if op == "hier" else None, label=f"{op}, {link} Mbit/s")
                ax.plot(b, [cm.predict(op, N, G, x, link) * 1e3 for x in b], ":", color=colors[i % len(colors)], lw=0.8)
        ax.set(xscale="log", yscale="log", xlabel="per-rank bytes", ylabel="ms (median, min-max)",
               title=f"N={N} nodes x G={G} ranks (dotted: α–β fit)")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    save_figure_atomic(fig, out, dpi=100)


def parse_rates(text: str) -> list[float | None]:
    return [None if r == "none" else float(r) for r in text.split(",")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topologies", default="2x2,2x4", help="NxG,...")
    parser.add_argument("--rates", default="100,400,2000", help="Mbit/s, comma-separated; none = unshaped")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="per-rank bytes, comma-separated")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--out", default=str(HAND_RUNS / "moe"), help="folder for comm_benchmark.*")
    parser.add_argument("--reanalyse", metavar="JSON", help="refit and rewrite from a stored comm_benchmark.json "
                        "(its timings, command and commit kept; the analysis commit recorded beside them)")
    args = parser.parse_args(argv)
    if args.reanalyse:
        record = json.loads(Path(args.reanalyse).read_text())
        record["analysis"] = analyse(record["rows"])
        record["analysis_commit"] = git_state()["git_commit"]
        return write(record, Path(args.out))
    if args.reps < 5:
        parser.error("--reps must be >= 5 (median, min and max of at least 5 repetitions)")
    reason = testbed_unavailable_reason()
    if reason:
        print(f"bench_comm needs the emulated cluster: {reason}", file=sys.stderr)
        return 2
    git = git_state()  # the code that ran, even if a commit lands while it runs
    topologies = [tuple(int(v) for v in t.split("x")) for t in args.topologies.split(",")]
    with exclusive() as alone:  # no other benchmark of the project times at the same time
        start = time.perf_counter()
        rows = measure(topologies, parse_rates(args.rates), [int(s) for s in args.sizes.split(",")], args.reps)
        wall = time.perf_counter() - start
    record = {"environment": environment(git), "wall_s": wall, "exclusive": alone, "rows": rows,
              "analysis": analyse(rows)}
    return write(record, Path(args.out))


def write(record: dict, out: Path) -> int:
    write_json_atomic(out / "comm_benchmark.json", record)
    write_text_atomic(out / "COMM_BENCHMARK.md", markdown(record))
    plot(record, out / "comm_benchmark.png")
    print(f"wrote {out / 'COMM_BENCHMARK.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
