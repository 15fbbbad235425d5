"""The peer grid of ``python -m replications.moe.bench``: the suite's MoE layer against the layers a user would pick
instead (replications/moe/peers.py), a dense FFN of equal active FLOPs and the grouped-matmul ceiling.

Grid: tokens {512, 2048, 8192, 16384} x experts {8, 16, 64} x top-k {1, 2}, d_model 256, expert hidden 1024 / k
(equal active FLOPs per token in every cell), forward+backward with the input's gradient. Each peer carries the
layer's weights and is checked against it (output and input gradient) before any timing. One interleaved run:
every repetition visits every cell, and within a cell runs the suite, each peer, the dense FFN and the ceiling
once, in an order that rotates by one each repetition. Per cell and peer: the median over repetitions of
suite seconds / peer seconds of the same repetition (< 1: the suite is faster) with a bootstrap 95 % interval.
Repetitions: $BENCH_PEER_REPS (default REPS); a column whose warm-up pass takes over SLOW x the suite's (HF eager
at 64 experts) runs in the first FEW only, its ratio being far from 1. --quick: a toy grid (48 tokens, d 32) for tests.
Allocator: the layer keeps freed memory for reuse (shared/allocator.py; glibc would map its 64 MB stacked expert
gradients afresh and page-fault them every pass). The setting is process-wide, so every column here runs under
it alike, and the record names it (`allocator`). A MALLOC_* variable set by the user replaces it (and is recorded).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import numpy as np
import torch

from replications.moe.peers import PEERS, TOP1_ONLY, agreement, build, ceiling, deepspeed_ready, one_pass, suite_layer
from shared.allocator import allocator
from shared.atomic import save_figure_atomic
from shared.stats import percentile_interval, resample_indices

REPS = 20  # a repetition of the full grid ~45-55 s alone at 1 thread (2-core Xeon); with checks ~20 min
COLUMNS = (*PEERS, "dense", "ceiling")
LABELS = {"hf_switch": "HF Switch", "hf_grouped": "HF grouped_mm", "hf_eager": "HF eager", "deepspeed": "DeepSpeed",
          "dense": "dense FFN", "ceiling": "matmul ceiling"}
DENSE_TARGET = 1.10
SLOW, FEW = 5.0, 2  # HF eager at E=64 takes 10-40 s a pass (its backward writes a full [E, h, d] gradient per expert)


@dataclass(frozen=True)
class Grid:
    tokens: tuple[int, ...] = (512, 2048, 8192, 16384)
    experts: tuple[int, ...] = (8, 16, 64)
    ks: tuple[int, ...] = (1, 2)
    d: int = 256
    h: int = 1024  # expert hidden at k=1; top-k experts get h // k
    reps: int = REPS


QUICK = Grid(tokens=(48,), experts=(4, 8), d=32, h=64, reps=2)


def reps_from_env(default: int) -> int:
    raw = os.environ.get("BENCH_PEER_REPS", str(default))
    if not raw.isdigit() or int(raw) < 1:
        raise SystemExit(f"BENCH_PEER_REPS={raw!r}: give a whole number of repetitions of the grid, at least 1")
    return int(raw)


def bootstrap_median(values: list[float], seed: int = 0, draws: int = 2000) -> tuple[float, float]:
    v = np.asarray(values, dtype=np.float64)
    return percentile_interval(np.median(v[resample_indices(len(v), draws, seed)], axis=1), 0.95)


def make_cells(grid: Grid) -> list[dict]:
    """Every (tokens, E, k) cell with its timed steps, after checking each peer against the layer. The check's
    pass is the peer's warm-up; its time (less the layer's pass) decides whether the peer is slow."""
    skip_ds = deepspeed_ready()
    xs = {T: torch.randn(T, grid.d, generator=torch.Generator().manual_seed(T), requires_grad=True) for T in grid.tokens}
    cells = []
    for E in grid.experts:
        for k in grid.ks:
            layer = suite_layer(grid.d, grid.h // k, E, k)
            skipped = {n: TOP1_ONLY[n] for n in PEERS if k > 1 and n in TOP1_ONLY}
            if skip_ds:
                skipped["deepspeed"] = skip_ds
            peers = {n: build(n, layer, k, max(grid.tokens)) for n in ("suite", *PEERS, "dense") if n not in skipped}
            for T, x in xs.items():
                warm = {"suite": seconds(partial(one_pass, peers["suite"], x))}
                checks = {}
                for n in PEERS:
                    if n not in skipped:
                        t0 = time.perf_counter()
                        checks[n] = agreement(layer, peers[n], x, k)
                        warm[n] = max(time.perf_counter() - t0 - warm["suite"], 0.0)
                bad = {n: c for n, c in checks.items() if not c["agrees"]}
                if bad:
                    raise RuntimeError(f"T={T} E={E} k={k}: peers disagree with the layer: {bad}")
                steps = {n: partial(one_pass, p, x) for n, p in peers.items()}
                steps["ceiling"] = ceiling(layer, layer.last_stats["expert_load"])
                cells.append({"tokens": T, "experts": E, "k": k, "expert_hidden": grid.h // k, "steps": steps,
                              "warm": warm, "times": {n: [] for n in steps}, "checks": checks, "skipped": skipped})
    return cells


def seconds(step) -> float:
    t0 = time.perf_counter()
    step()
    return time.perf_counter() - t0


def time_cells(cells: list[dict], reps: int) -> float:
    """Interleaved timing: each repetition visits every cell; inside a cell the order rotates by one per repetition.
    A column whose warm-up pass took over SLOW x the layer's runs in the first FEW repetitions only."""
    for cell in cells:  # warm-up of what the checks did not run: first passes allocate
        for n, step in cell["steps"].items():
            if n not in cell["warm"]:
                cell["warm"][n] = seconds(step)
        cell["limit"] = {n: FEW if t > SLOW * cell["warm"]["suite"] else reps for n, t in cell["warm"].items()}
    t_start = time.time()
    for rep in range(reps):
        for cell in cells:
            names = [n for n in cell["steps"] if rep < cell["limit"][n]]
            shift = rep % len(names)
            for n in names[shift:] + names[:shift]:
                cell["times"][n].append(seconds(cell["steps"][n]))
        print(f"\rpeer grid repetition {rep + 1}/{reps} ({time.time() - t_start:.0f} s)", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return time.time() - t_start


def summarise(cells: list[dict]) -> list[dict]:
    """One row per cell and column: the suite's time ratio to it (median over repetitions, bootstrap 95 %), or why skipped."""
    rows = []
    for c in cells:
        base = {"tokens": c["tokens"], "experts": c["experts"], "k": c["k"], "expert_hidden": c["expert_hidden"],
                "suite_seconds": statistics.median(c["times"]["suite"])}
        for n in COLUMNS:
            if n in c["skipped"]:
                rows.append({**base, "peer": n, "skipped": c["skipped"][n]})
                continue
            ratios = [ts / tp for ts, tp in zip(c["times"]["suite"], c["times"][n])]  # the peer's repetitions
            lo, hi = bootstrap_median(ratios) if len(ratios) > 1 else (ratios[0], ratios[0])
            rows.append({**base, "peer": n, "peer_seconds": statistics.median(c["times"][n]),
                         "ratio": statistics.median(ratios), "ratio_ci95": [lo, hi], "pairs": len(ratios),
                         **({"check": c["checks"][n]} if n in c["checks"] else {})})
            if n == "dense":  # the layer's matmuls alone against the dense FFN: the part of the ratio routing cannot fix
                rows[-1]["ceiling_to_dense"] = statistics.median(
                    tc / td for tc, td in zip(c["times"]["ceiling"], c["times"]["dense"]))
    return rows


def run(grid: Grid) -> dict:
    """Build, check and time the grid; the record's `peer_grid` entry."""
    cells = make_cells(grid)
    wall = time_cells(cells, grid.reps)
    return {"grid": asdict(grid), "wall_seconds": wall, "load_average_after": os.getloadavg(),
            "threads": torch.get_num_threads(), "allocator": allocator(), "rows": summarise(cells)}


def behind(row: dict) -> bool:
    """The suite is slower than this column: a peer faster than it, or the dense FFN beyond the target."""
    limit = DENSE_TARGET if row["peer"] == "dense" else 1.0
    return row["peer"] != "ceiling" and "ratio" in row and row["ratio"] > limit


def allocator_text(pg: dict) -> str:
    """The record's malloc setting in words (older records: `malloc_env`, the MALLOC_* variables set)."""
    a = pg.get("allocator")
    if a is None:
        return "glibc " + (str(pg["malloc_env"]) if pg.get("malloc_env") else "defaults")
    if "mmap_threshold" in a:
        return (f"{a['malloc']}, freed blocks up to {a['mmap_threshold'] / 2**30:g} GiB kept for reuse "
                "(mmap and trim thresholds, set by the layer: shared/allocator.py)")
    return ", ".join(f"{k}={v}" for k, v in a.items()) if len(a) > 1 else str(a["malloc"])


def markdown(pg: dict) -> str:
    g = pg["grid"]
    lines = ["", "## Against the peers: the layers a user would pick instead", "",
             f"{g['reps']} repetitions of the grid, interleaved (every repetition visits every cell; inside a cell the "
             f"order of suite, peers, dense and ceiling rotates by one per repetition); {pg['threads']} thread(s); "
             f"{pg['wall_seconds']:.0f} s; load average after: {', '.join(f'{v:.1f}' for v in pg['load_average_after'])}. "
             f"Allocator, the same for every column: {allocator_text(pg)}. "
             f"d_model {g['d']}, expert hidden {g['h']} / k, forward+backward, input gradient included. No capacity "
             "limit (nothing dropped): every peer does the same expert work on the same routing, with the suite "
             "layer's weights copied in and its output and input gradient checked equal (relative error < 1e-4) "
             "before timing. How each peer is configured: replications/moe/peers.py. A column whose warm-up pass took "
             f"over {SLOW:.0f}x the suite's is timed in the first {FEW} repetitions only (`pairs` in benchmark.json).",
             "Each entry: the suite's time / that column's time, median over repetitions [bootstrap 95 %]; below 1 "
             f"the suite is faster. **Bold**: the suite is behind (a peer faster, or the dense FFN ratio above "
             f"{DENSE_TARGET:.2f}). Ceiling: the layer's grouped matmuls alone (>= 1 by construction; what routing, "
             "gathers and combine add). In brackets after the dense ratio: those matmuls alone against the dense FFN "
             "(E experts' small matmuls and E times the weights to read and their gradients to write, against one "
             "FFN's), the part of the dense ratio that no routing work can remove.", "",
             "| tokens | E | k | suite ms | " + " | ".join(LABELS[n] for n in COLUMNS) + " |",
             "|---|---|---|---|" + "---|" * len(COLUMNS)]
    by_cell: dict[tuple, dict[str, dict]] = {}
    for r in pg["rows"]:
        by_cell.setdefault((r["tokens"], r["experts"], r["k"]), {})[r["peer"]] = r
    for (T, E, k), cols in sorted(by_cell.items(), key=lambda kv: (kv[0][2], kv[0][1], kv[0][0])):
        cells = []
        for n in COLUMNS:
            r = cols[n]
            if "skipped" in r:
                cells.append("n/a")
                continue
            text = f"{r['ratio']:.2f} [{r['ratio_ci95'][0]:.2f}, {r['ratio_ci95'][1]:.2f}]"
            text = f"**{text}**" if behind(r) else text
            if "ceiling_to_dense" in r:
                text += f" ({r['ceiling_to_dense']:.2f})"
            cells.append(text)
        lines.append(f"| {T} | {E} | {k} | {cols['dense']['suite_seconds'] * 1e3:.1f} | " + " | ".join(cells) + " |")
    skipped = sorted({f"{LABELS[r['peer']]} at k={r['k']}: {r['skipped']}" for r in pg["rows"] if "skipped" in r})
    if skipped:
        lines += ["", "n/a: " + "; ".join(skipped) + "."]
    late = [r for r in pg["rows"] if behind(r)]
    lines += ["", f"Cells where the suite is behind: {len(late)} of "
                  f"{sum(1 for r in pg['rows'] if r['peer'] != 'ceiling' and 'ratio' in r)} comparisons."]
    lines += [f"- {r['tokens']} tokens, E={r['experts']}, k={r['k']}: {LABELS[r['peer']]} {r['ratio']:.2f} "
              f"[{r['ratio_ci95'][0]:.2f}, {r['ratio_ci95'][1]:.2f}]"
              + (f"; its matmuls alone: {r['ceiling_to_dense']:.2f}" if "ceiling_to_dense" in r else "") for r in late]
    lines += ["", "![the suite's time ratio to each peer per cell](benchmark_peers.png)"]
    return "\n".join(lines) + "\n"


def plot(pg: dict, target: Path, title: str) -> None:
    """Per k, the suite's time ratio to each column at every (tokens, E), log scale: below 1 the suite is ahead."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = sorted({r["k"] for r in pg["rows"]})
    fig, axes = plt.subplots(len(ks), 1, figsize=(10, 3.4 * len(ks)), squeeze=False)
    colours = {"hf_switch": "#dd8452", "hf_grouped": "#55a868", "hf_eager": "#8172b3", "deepspeed": "#c44e52",
               "dense": "#4c72b0", "ceiling": "#7f7f7f"}
    for ax, k in zip(axes[:, 0], ks):
        rows = [r for r in pg["rows"] if r["k"] == k and "ratio" in r]
        cells = sorted({(r["experts"], r["tokens"]) for r in rows})
        pos = {c: i for i, c in enumerate(cells)}
        for j, n in enumerate(COLUMNS):
            mine = [r for r in rows if r["peer"] == n]
            if not mine:
                continue
            xs = [pos[(r["experts"], r["tokens"])] + (j - len(COLUMNS) / 2) * 0.11 for r in mine]
            med = [r["ratio"] for r in mine]
            err = [[m - r["ratio_ci95"][0] for m, r in zip(med, mine)], [r["ratio_ci95"][1] - m for m, r in zip(med, mine)]]
            ax.errorbar(xs, med, yerr=err, fmt="o" if n not in ("dense", "ceiling") else "s", ms=4, capsize=2,
                        color=colours[n], label=LABELS[n])
        ax.axhline(1.0, color="black", lw=1)
        ax.axhline(DENSE_TARGET, color="#4c72b0", ls="--", lw=0.8, label=f"dense target {DENSE_TARGET:.2f}")
        ax.set_yscale("log")
        ax.set_xticks(range(len(cells)), [f"E={E}\n{T}" for E, T in cells], fontsize=7)
        ax.set_ylabel(f"k={k}: suite time / column time\n(below 1: suite ahead)", fontsize=8)
        ax.grid(axis="y", alpha=0.3, which="both")
    axes[0, 0].legend(fontsize=7, ncol=4, loc="upper left")
    axes[0, 0].set_title(title, fontsize=9)
    fig.tight_layout()
    save_figure_atomic(fig, target, dpi=110)
