"""Scaling of GAGA's group aggregation with graph size at Tolokers' constant mean degree (issue 42).

`python -m replications.gaga.bench_grouping [--sizes 2900 5800 ...] [--repeats 3] [--out FOLDER]` writes
FOLDER/bench_grouping.json and FOLDER/bench_grouping.png (default FOLDER: results/gaga). Run it alone on the
machine: the targets are exponents and ratios, but a busy core still bends them.

Each size n is a uniform random graph (Erdos-Renyi with exactly round(n * degree / 2) distinct undirected edges,
no self-loops) at Tolokers' mean degree, with Tolokers' 10 features, half the nodes train (its 50/25/25 splits)
and its 21.82 % positives. Both implementations build the full K = 2 sequences (`relation_sequences`), one BLAS
thread, alternating which goes first; the time is process CPU seconds, median over --repeats. The fitted
exponent is the least-squares slope of log time on log n; `two_hop_pairs` (the reach within two hops, self
included) is the output any exact method must enumerate, and its own exponent is printed beside the times:
at degree 88 the two-hop sets still saturate the smaller graphs (93 % of 2.9k nodes, 15 % of 46k), so the
pairs themselves grow faster than n over this range.

`previous_relation_sequences` is the implementation before issue 42 (dense `reach.toarray() @ x` above 2 %
two-hop density), kept here as the timing baseline and as the tests' reference.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from threadpoolctl import threadpool_info, threadpool_limits

from replications.gaga.grouping import N_GROUPS, OTHER, group_ids, relation_sequences, with_self_loops
from shared.atomic import save_figure_atomic, write_json_atomic
from shared.paths import RESULTS
from shared.runinfo import environment

# Tolokers in the data mirror: 11,758 nodes, 519,000 undirected edges stored once, no duplicates or self-loops
# (tests/test_gaga_grouping_scale.py checks this against the file): mean degree 2 * 519000 / 11758.
TOLOKERS_NODES, TOLOKERS_EDGES, FEATURES, TRAIN, POSITIVE = 11_758, 519_000, 10, 0.5, 0.2182
MEAN_DEGREE = 2 * TOLOKERS_EDGES / TOLOKERS_NODES
SIZES = (2_900, 5_800, 11_600, 23_200, 46_400)
TARGET_EXPONENT = 1.15


def previous_relation_sequences(adj: sp.spmatrix, x: np.ndarray, groups: np.ndarray, hops: int = 2,
                                block: int = 512, workers: int = 1, dense_above: float = 0.02) -> np.ndarray:
    """`grouping.relation_sequences` as it was before issue 42 (commit c476f73), verbatim but for names."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    n, f = x.shape
    a1 = with_self_loops(adj)
    masks = np.stack([groups == g for g in range(N_GROUPS)], axis=1).astype(np.float32)  # (N, 3)
    xg = np.concatenate([x * masks[:, g:g + 1] for g in range(N_GROUPS)] + [masks], axis=1)
    seq = np.empty((n, 1 + hops * N_GROUPS, f), dtype=np.float32)
    seq[:, 0] = x

    def block_means(rows: slice) -> np.ndarray:
        reach = a1[rows]
        ids = np.arange(rows.start, rows.stop)
        out = np.empty((len(ids), hops, N_GROUPS, f), dtype=np.float32)
        for k in range(hops):
            if k > 0:
                reach = reach @ a1
                reach.data[:] = 1.0
            if reach.nnz > dense_above * reach.shape[0] * n:
                sums = reach.toarray() @ xg
            else:
                sums = np.asarray(reach @ xg)
            feat, cnt = sums[:, : N_GROUPS * f].reshape(-1, N_GROUPS, f), sums[:, N_GROUPS * f:]
            own = groups[ids]
            moved = own != OTHER
            r = np.nonzero(moved)[0]
            feat[r, own[moved]] -= x[ids[moved]]
            cnt[r, own[moved]] -= 1.0
            feat[r, OTHER] += x[ids[moved]]
            cnt[r, OTHER] += 1.0
            cnt = np.rint(cnt)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[:, k] = np.where(cnt[..., None] > 0, feat / cnt[..., None], 0.0)
        return out

    def work(start: int) -> None:
        rows = slice(start, min(start + block, n))
        seq[rows, 1:] = block_means(rows).reshape(-1, hops * N_GROUPS, f)

    starts = range(0, n, block)
    if workers > 1:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(work, starts))
    else:
        for s in starts:
            work(s)
    return seq


def random_graph(n: int, degree: float, rng: np.random.Generator) -> sp.csr_matrix:
    """Symmetric binary CSR with exactly round(n * degree / 2) distinct undirected edges, no self-loops."""
    m = round(n * degree / 2)
    if m > n * (n - 1) // 2:
        raise ValueError(f"{n} nodes cannot hold mean degree {degree}")
    keys = np.empty(0, dtype=np.int64)
    while len(keys) < m:  # draw, drop loops and repeats (first occurrence wins), top up
        r, c = rng.integers(0, n, 2 * m), rng.integers(0, n, 2 * m)
        new = np.minimum(r, c) * n + np.maximum(r, c)
        keys = np.concatenate([keys, new[r != c]])
        _, first = np.unique(keys, return_index=True)
        keys = keys[np.sort(first)]
    keys = keys[:m]
    r, c = keys // n, keys % n
    a = sp.coo_matrix((np.ones(2 * m, np.float32), (np.r_[r, c], np.r_[c, r])), shape=(n, n)).tocsr()
    return a


def synthetic(n: int, degree: float, seed: int) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    rng = np.random.default_rng([seed, n])
    adj = random_graph(n, degree, rng)
    x = rng.random((n, FEATURES), dtype=np.float32)
    y = (rng.random(n) < POSITIVE).astype(np.int64)
    groups = group_ids(y, np.sort(rng.permutation(n)[: int(TRAIN * n)]))
    return adj, x, groups


def two_hop_pairs(adj: sp.spmatrix, block: int = 2048) -> int:
    a1 = with_self_loops(adj).astype(bool)
    return sum(int((a1[s:s + block] @ a1).nnz) for s in range(0, a1.shape[0], block))


def fit_exponent(n: list[int], t: list[float]) -> float:
    return float(np.polyfit(np.log(n), np.log(t), 1)[0])


def local_exponents(n: list[int], t: list[float]) -> list[float]:
    return [round(float(np.log(t[i + 1] / t[i]) / np.log(n[i + 1] / n[i])), 3) for i in range(len(n) - 1)]


def time_one(fn, *args) -> tuple[float, float, np.ndarray]:
    c, w = time.process_time(), time.perf_counter()
    out = fn(*args)
    return time.process_time() - c, time.perf_counter() - w, out


def measure(n: int, degree: float, repeats: int, seed: int) -> dict:
    adj, x, groups = synthetic(n, degree, seed)
    impls = {"new": relation_sequences, "old": previous_relation_sequences}
    cpu: dict[str, list[float]] = {k: [] for k in impls}
    wall: dict[str, list[float]] = {k: [] for k in impls}
    outs = {}
    for rep in range(repeats):
        for name in (list(impls) if rep % 2 == 0 else list(impls)[::-1]):  # alternate who goes first
            c, w, outs[name] = time_one(impls[name], adj, x, groups)
            cpu[name].append(c)
            wall[name].append(w)
    pairs = two_hop_pairs(adj)
    row = {
        "nodes": n, "mean_degree": round(adj.nnz / n, 3), "two_hop_pairs": pairs,
        "two_hop_density": round(pairs / n / n, 4),
        "max_abs_difference": float(np.abs(outs["new"] - outs["old"]).max()),
        **{f"{k}_cpu_seconds": round(statistics.median(v), 4) for k, v in cpu.items()},
        **{f"{k}_cpu_seconds_all": [round(s, 4) for s in v] for k, v in cpu.items()},
        **{f"{k}_wall_seconds": round(statistics.median(v), 4) for k, v in wall.items()},
    }
    row["speedup"] = round(row["old_cpu_seconds"] / row["new_cpu_seconds"], 3)
    row["new_ns_per_two_hop_pair"] = round(row["new_cpu_seconds"] / pairs * 1e9, 2)
    print(f"n={n:>6}: {pairs:,} two-hop pairs (density {row['two_hop_density']:.3f}); CPU s old "
          f"{row['old_cpu_seconds']:.3f}, new {row['new_cpu_seconds']:.3f} ({row['speedup']:.2f}x); "
          f"max |new - old| {row['max_abs_difference']:.2e}", flush=True)
    return row


def plot(record: dict, target: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = record["rows"]
    n = np.array([r["nodes"] for r in rows], dtype=float)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for key, colour, label in (("old", "#c44e52", "before (dense above 2 % two-hop density)"),
                               ("new", "#4878a8", "sparse (every density)")):
        t = np.array([r[f"{key}_cpu_seconds"] for r in rows])
        ax.loglog(n, t, "o-", color=colour, label=f"{label}: n^{record['exponents'][key]:.2f}")
    pairs = np.array([r["two_hop_pairs"] for r in rows], dtype=float)
    scale = rows[-1]["new_cpu_seconds"] / pairs[-1]
    ax.loglog(n, pairs * scale, ":", color="grey",
              label=f"two-hop pairs (scaled): n^{record['exponents']['two_hop_pairs']:.2f}")
    ax.loglog(n, n / n[0] * rows[0]["new_cpu_seconds"], "--", color="black", lw=0.8, label="linear")
    ax.set(xlabel=f"nodes (mean degree {record['mean_degree']:.1f})", ylabel="CPU seconds (median, 1 thread)",
           title=f"GAGA grouping, K = 2, commit {(record['environment']['git_commit'] or '')[:7]}")
    ax.title.set_fontsize(10)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    save_figure_atomic(fig, target, dpi=110)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="node counts (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--degree", type=float, default=MEAN_DEGREE, help="mean degree (default: Tolokers')")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS / "gaga", help="folder for bench_grouping.{json,png}")
    args = parser.parse_args(argv)
    sizes = sorted(args.sizes)
    torch.set_num_threads(1)  # unused here, but environment() records it: one thread throughout

    load_before = [round(v, 2) for v in os.getloadavg()]
    t0 = time.perf_counter()
    with threadpool_limits(1):
        blas = [{k: i.get(k) for k in ("internal_api", "version", "architecture", "num_threads")}
                for i in threadpool_info()]
        rows = [measure(n, args.degree, args.repeats, args.seed) for n in sizes]
    ns = [r["nodes"] for r in rows]
    exponents = {k: round(fit_exponent(ns, [r[f"{k}_cpu_seconds"] for r in rows]), 3) for k in ("old", "new")}
    exponents["two_hop_pairs"] = round(fit_exponent(ns, [r["two_hop_pairs"] for r in rows]), 3)
    record = {
        "what": "GAGA group aggregation (relation_sequences, K = 2, full neighbourhoods, self-loops) on uniform "
                "random graphs at Tolokers' mean degree; process CPU seconds, median of the repeats, 1 BLAS thread",
        "mean_degree": round(args.degree, 3), "features": FEATURES, "train_fraction": TRAIN, "repeats": args.repeats,
        "seed": args.seed, "rows": rows, "exponents": exponents,
        "local_exponents": {**{k: local_exponents(ns, [r[f"{k}_cpu_seconds"] for r in rows]) for k in ("old", "new")},
                            "two_hop_pairs": local_exponents(ns, [r["two_hop_pairs"] for r in rows])},
        "target_exponent": TARGET_EXPONENT,
        "exponent_note": "least-squares slope of log CPU seconds on log nodes; two_hop_pairs is the same fit of "
                         "the pairs any exact method must enumerate (its floor over these sizes)",
        "blas": blas, "load_average_before": load_before, "load_average_after": [round(v, 2) for v in os.getloadavg()],
        "wall_seconds": round(time.perf_counter() - t0, 1), "environment": environment(),
    }
    print(f"exponents: old {exponents['old']:.3f}, new {exponents['new']:.3f} (target <= {TARGET_EXPONENT}), "
          f"two-hop pairs {exponents['two_hop_pairs']:.3f}; load average {load_before} -> "
          f"{record['load_average_after']}")
    args.out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(args.out / "bench_grouping.json", record)
    if len(rows) >= 2:
        plot(record, args.out / "bench_grouping.png")
    print(f"wrote {args.out / 'bench_grouping.json'}")
    return record


if __name__ == "__main__":
    main()
