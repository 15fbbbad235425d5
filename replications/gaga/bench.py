"""Benchmark GAGA's group aggregation on a synthetic graph with YelpChi's size and degree statistics.

`python -m replications.gaga.bench [--workers 2] [--block 512] [--out FOLDER]` writes FOLDER/benchmark.json
(default outputs/results/gaga; `--out results/gaga` replaces the committed one, which `make report` then renders
into results/gaga/README.md through replications/gaga/report.py).
The graph: 45,954 nodes, 32 features, three relations with YelpChi's stored edge counts (R-U-R 98,630; R-T-R
1,147,232; R-S-R 6,805,486, DGL docs) drawn uniformly at random. Uniform edges give larger 2-hop sets than
YelpChi's clustered relations (R-S-R links reviews of one product with one star rating), so this is a
pessimistic stand-in for the real preprocessing.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from replications.gaga.grouping import group_ids, relation_sequences, with_self_loops
from shared.atomic import write_json_atomic
from shared.paths import HAND_RUNS

N_NODES, N_FEATS, TRAIN, POSITIVE = 45_954, 32, 0.4, 6_677 / 45_954
STORED_EDGES = {"net_rur": 98_630, "net_rtr": 1_147_232, "net_rsr": 6_805_486}  # both directions


def synthetic_relation(n: int, stored: int, rng: np.random.Generator) -> sp.csr_matrix:
    """Symmetric binary graph with about `stored` directed entries (duplicates removed)."""
    m = stored // 2
    r, c = rng.integers(0, n, m), rng.integers(0, n, m)
    a = sp.coo_matrix((np.ones(m, np.float32), (r, c)), shape=(n, n)).tocsr()
    a = ((a + a.T) > 0).astype(np.float32).tocsr()
    a.setdiag(0)
    a.eliminate_zeros()
    return a


def cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--block", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=HAND_RUNS / "gaga", help="folder to write benchmark.json in")
    args = parser.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    x = rng.random((N_NODES, N_FEATS), dtype=np.float32)
    y = (rng.random(N_NODES) < POSITIVE).astype(np.int64)
    groups = group_ids(y, np.sort(rng.permutation(N_NODES)[: int(TRAIN * N_NODES)]))
    rows = []
    wall0, cpu0 = time.perf_counter(), cpu_seconds()
    for name, stored in STORED_EDGES.items():
        adj = synthetic_relation(N_NODES, stored, rng)
        a1 = with_self_loops(adj)
        t, c = time.perf_counter(), cpu_seconds()
        seq = relation_sequences(adj, x, groups, hops=2, block=args.block, workers=args.workers)
        wall, cpu = time.perf_counter() - t, cpu_seconds() - c
        two_hop = sum(int((a1[s:s + args.block] @ a1).nnz) for s in range(0, N_NODES, args.block))
        rows.append({"relation": name, "stored_edges": int(adj.nnz), "two_hop_pairs": two_hop,
                     "seconds": round(wall, 2), "cpu_seconds": round(cpu, 2)})
        print(f"{name}: {adj.nnz:,} edges, {two_hop:,} 2-hop pairs, {wall:.1f} s wall, {cpu:.1f} s CPU", flush=True)
        assert seq.shape == (N_NODES, 7, N_FEATS) and np.isfinite(seq).all()
    total_wall = time.perf_counter() - wall0
    record = {
        "what": "GAGA group aggregation (K=2, full neighbourhoods, self-loops), YelpChi-sized synthetic graph",
        "nodes": N_NODES, "features": N_FEATS, "relations": rows,
        "total_seconds": round(total_wall, 2), "total_cpu_seconds": round(cpu_seconds() - cpu0, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "workers": args.workers, "block": args.block, "target_seconds": 120,
        "cpus": os.cpu_count(), "machine": platform.processor() or platform.machine(),
        "load_average_at_end": [round(v, 2) for v in os.getloadavg()],
        "note": "wall seconds include time lost to other processes on a shared machine; total_seconds also "
                "includes generating the synthetic graphs and counting 2-hop pairs",
    }
    args.out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(args.out / "benchmark.json", record)
    print(f"wrote {args.out / 'benchmark.json'}")
    return record


if __name__ == "__main__":
    main()
