"""Worker behind `replications.moe.bench_comm`: times communication phases only, never compute.

    python -m replications.moe.comm_worker --sizes 1024,65536 --reps 5 [--ops flat,hier,p2p_intra,p2p_inter]
    torchrun --standalone --nproc_per_node=4 -m replications.moe.comm_worker --sizes 1024 --ranks-per-node 2 \
        --a2a-trials 2 --out comm.json     # the same on torchrun ranks (NCCL on GPUs), with H-A2A == flat checks

For each per-rank size B (bytes each rank sends in all, B / W to every rank as one fp32 row, so the
layout transform costs a copy of the bytes and no per-row index work, as with Hetu's fixed-size buffers): a flat all-to-all,
the hierarchical one (G = --ranks-per-node, else LOCAL_WORLD_SIZE), and ping-pong between rank 0 and rank 1 (same node) and rank 0
and rank G (next node), B bytes each way (half the round trip). Every repetition starts after a barrier;
an all-to-all's time is the slowest rank's; for H-A2A also its network phases alone (`hier_net`: the
leaders' gather, exchange and scatter) and its layout copies (`hier_copy`). Rank 0 emits one row per
(op, size) with every repetition. `--a2a-trials` adds a2a_check's H-A2A == flat trials to every rank's result.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.distributed as dist

from replications.moe.a2a_check import check
from replications.moe.hierarchical import hierarchical_all_to_all_raw, hierarchy
from replications.moe.testbed import add_worker_args, ranks_per_node, settle, worker_device, worker_emit, worker_init


def timed_dispatch_combine(send: list[int], recv: list[int], d_model: int) -> float:
    """Seconds of one dispatch + combine all-to-all pair (rows of d_model fp32 values; send[j] rows to rank j,
    recv[j] from it), after a barrier; the slowest rank's time, the same on every rank."""
    dev = worker_device()
    x = torch.ones(sum(send), d_model, device=dev)
    got = torch.empty(sum(recv), d_model, device=dev)
    back = torch.empty(sum(send), d_model, device=dev)
    dist.barrier()
    settle()
    start = time.perf_counter()
    dist.all_to_all_single(got, x, recv, send)  # dispatch
    dist.all_to_all_single(back, got, send, recv)  # combine
    settle()
    return slowest(time.perf_counter() - start)


def slowest(seconds: float) -> float:
    """The largest of every rank's `seconds`: a collective's time is its slowest rank's."""
    took = torch.tensor([seconds], dtype=torch.float64, device=worker_device())
    dist.all_reduce(took, op=dist.ReduceOp.MAX)
    return float(took)


def exchange_is_exact(outgoing: list[torch.Tensor], expected: list[torch.Tensor]) -> bool:
    """A dispatch + combine of tagged rows, checked: outgoing[j] goes to rank j, and True when what arrives from
    each rank j equals expected[j] bit for bit and the combine brings back exactly what was sent. The splits come
    from the tensors, so a rank that expects the wrong number of rows from a peer fails the check (or the call)."""
    dev = worker_device()
    x, want = torch.cat(outgoing).to(dev), torch.cat(expected).to(dev)
    send, recv = [len(t) for t in outgoing], [len(t) for t in expected]
    got, back = torch.empty_like(want), torch.empty_like(x)
    dist.all_to_all_single(got, x, recv, send)
    dist.all_to_all_single(back, got, send, recv)
    return bool(torch.equal(got, want) and torch.equal(back, x))


def timed_a2a(op: str, B: int, W: int, G: int) -> list[float]:
    """[total] for flat; [total, network, copies] for hier: the leaders' gather + exchange + scatter time
    and their two layout transforms (memory copies, which 4-8 processes on 2 cores make CPU-bound)."""
    x = torch.ones(W, max(1, B // 4 // W), device=worker_device())  # one row per destination: the layout transform is a copy
    send = [1] * W
    phases: dict[str, float] = {}
    dist.barrier()
    settle()
    start = time.perf_counter()
    if op == "flat":
        out = torch.empty_like(x)
        dist.all_to_all_single(out, x, send, send)
    else:
        hierarchical_all_to_all_raw(x, send, send, hierarchy(G), phases)
    settle()
    total = time.perf_counter() - start
    leader = dist.get_rank() % G == 0
    net = sum(phases.get(k, 0.0) for k in ("gather", "exchange", "scatter")) if leader else 0.0
    copies = phases.get("layout", 0.0) + phases.get("reverse", 0.0)
    took = torch.tensor([total, net, copies], dtype=torch.float64, device=worker_device())
    dist.all_reduce(took, op=dist.ReduceOp.MAX)
    return took.tolist() if op == "hier" else took.tolist()[:1]


def timed_p2p(peer: int, B: int) -> float | None:
    rank = dist.get_rank()
    buf = torch.ones(max(1, B // 4), device=worker_device())
    dist.barrier()
    settle()
    start = time.perf_counter()
    if rank == 0:
        dist.send(buf, peer)
        dist.recv(buf, peer)
    elif rank == peer:
        dist.recv(buf, 0)
        dist.send(buf, 0)
    settle()
    took = (time.perf_counter() - start) / 2
    return took if rank == 0 else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", required=True, help="per-rank bytes, comma-separated")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--ops", default="flat,hier,p2p_intra,p2p_inter")
    parser.add_argument("--a2a-trials", type=int, default=0, help="also run a2a_check's H-A2A == flat trials")
    add_worker_args(parser)
    args = parser.parse_args()
    rank, W, node = worker_init(timeout_s=600, args=args)
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
    checks = [check(t) for t in range(args.a2a_trials)]
    worker_emit({"rank": rank, "node": node, "N": N, "G": G, "rows": rows, "checks": checks})  # ends the process group too


if __name__ == "__main__":
    main()
