"""Worker behind `replications.moe.bench_comm`: times communication phases only, never compute.

    python -m replications.moe.comm_worker --sizes 1024,65536 --reps 5 [--ops flat,hier,p2p_intra,p2p_inter]

For each per-rank size B (bytes each rank sends in all, B / W to every rank as one fp32 row, so the
layout transform costs a copy of the bytes and no per-row index work, as with Hetu's fixed-size buffers): a flat all-to-all,
the hierarchical one (G = LOCAL_WORLD_SIZE), and ping-pong between rank 0 and rank 1 (same node) and rank 0
and rank G (next node), B bytes each way (half the round trip). Every repetition starts after a barrier;
an all-to-all's time is the slowest rank's; for H-A2A also its network phases alone (`hier_net`: the
leaders' gather, exchange and scatter) and its layout copies (`hier_copy`). Rank 0 emits one row per
(op, size) with every repetition.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.distributed as dist

from replications.moe.hierarchical import hierarchical_all_to_all_raw, hierarchy
from replications.moe.testbed import ranks_per_node, worker_emit, worker_init


def timed_dispatch_combine(send: list[int], recv: list[int], d_model: int) -> float:
    """Seconds of one dispatch + combine all-to-all pair (rows of d_model fp32 values; send[j] rows to rank j,
    recv[j] from it), after a barrier; the slowest rank's time, the same on every rank."""
    x = torch.ones(sum(send), d_model)
    got = torch.empty(sum(recv), d_model)
    back = torch.empty(sum(send), d_model)
    dist.barrier()
    start = time.perf_counter()
    dist.all_to_all_single(got, x, recv, send)  # dispatch
    dist.all_to_all_single(back, got, send, recv)  # combine
    elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    return float(elapsed)


def timed_a2a(op: str, B: int, W: int, G: int) -> list[float]:
    """[total] for flat; [total, network, copies] for hier: the leaders' gather + exchange + scatter time
    and their two layout transforms (memory copies, which 4-8 processes on 2 cores make CPU-bound)."""
    x = torch.ones(W, max(1, B // 4 // W))  # one row per destination: the layout transform is a copy
    send = [1] * W
    phases: dict[str, float] = {}
    dist.barrier()
    start = time.perf_counter()
    if op == "flat":
        out = torch.empty_like(x)
        dist.all_to_all_single(out, x, send, send)
    else:
        hierarchical_all_to_all_raw(x, send, send, hierarchy(G), phases)
    total = time.perf_counter() - start
    leader = dist.get_rank() % G == 0
    net = sum(phases.get(k, 0.0) for k in ("gather", "exchange", "scatter")) if leader else 0.0
    copies = phases.get("layout", 0.0) + phases.get("reverse", 0.0)
    took = torch.tensor([total, net, copies], dtype=torch.float64)
    dist.all_reduce(took, op=dist.ReduceOp.MAX)
    return took.tolist() if op == "hier" else took.tolist()[:1]


def timed_p2p(peer: int, B: int) -> float | None:
    rank = dist.get_rank()
    buf = torch.ones(max(1, B // 4))
    dist.barrier()
    start = time.perf_counter()
    if rank == 0:
        dist.send(buf, peer)
        dist.recv(buf, peer)
    elif rank == peer:
        dist.recv(buf, 0)
        dist.send(buf, 0)
    took = (time.perf_counter() - start) / 2
    return took if rank == 0 else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", required=True, help="per-rank bytes, comma-separated")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--ops", default="flat,hier,p2p_intra,p2p_inter")
    args = parser.parse_args()
    rank, W, node = worker_init(timeout_s=600)
    G = ranks_per_node()
    N = W // G
    hierarchy(G)  # create the process groups once, outside any timing
    rows = []
    for B in (int(s) for s in args.sizes.split(",")):
        for op in args.ops.split(","):
            if (op == "p2p_intra" and G < 2) or (op == "p2p_inter" and N < 2):
                continue
            times: list[list[float]] = []
            for rep in range(args.warmup + args.reps):
                if op in ("flat", "hier"):
                    t = timed_a2a(op, B, W, G)
                else:
                    t = [timed_p2p(1 if op == "p2p_intra" else G, B)]
                if rep >= args.warmup:
                    times.append(t)
            if rank == 0:
                names = [op, "hier_net", "hier_copy"] if op == "hier" else [op]
                for i, name in enumerate(names):
                    rows.append({"op": name, "bytes": B, "seconds": [t[i] for t in times],
                                 "load_average": list(os.getloadavg())})
    dist.barrier()
    worker_emit({"rank": rank, "N": N, "G": G, "rows": rows})  # ends the process group too


if __name__ == "__main__":
    main()
