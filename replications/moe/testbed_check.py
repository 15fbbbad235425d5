"""A tiny worker for the emulated cluster's own tests (`tests/test_moe_testbed.py`).

    --mode info   every rank emits (rank, world, node, the sum of all ranks) and the time to send
                  `--mib` MiB from rank 0 to the first rank of the last node and back; with `--a2a-trials`
                  also a2a_check's hierarchical == flat trials (one cluster start for both checks)
    --mode crash  rank `--crash-rank` exits with status 3 before joining the process group
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["info", "crash"], default="info")
    parser.add_argument("--crash-rank", type=int, default=1)
    parser.add_argument("--mib", type=float, default=0.0)
    parser.add_argument("--a2a-trials", type=int, default=0, help="also run a2a_check's H-A2A == flat trials")
    from replications.moe.testbed import add_worker_args, ranks_per_node, settle, worker_device, worker_emit, worker_init

    add_worker_args(parser)
    args = parser.parse_args()
    if args.mode == "crash" and int(os.environ["RANK"]) == args.crash_rank:
        sys.exit(3)  # before importing torch: the crash is seen at once
    import torch
    import torch.distributed as dist

    rank, world, node = worker_init(timeout_s=30, args=args)
    total = torch.tensor([float(rank)], device=worker_device())
    dist.all_reduce(total)
    seconds = None
    peer = world - ranks_per_node()  # first rank of the last node
    if args.mib > 0 and peer > 0 and rank in (0, peer):
        buf = torch.zeros(int(args.mib * 2**20) // 4, device=worker_device())
        other = peer if rank == 0 else 0
        start = time.perf_counter()
        if rank == 0:
            dist.send(buf, other)
            dist.recv(buf, other)
        else:
            dist.recv(buf, other)
            dist.send(buf, other)
        settle()
        seconds = time.perf_counter() - start
    dist.barrier()
    checks = []
    if args.a2a_trials:
        from replications.moe.a2a_check import check

        checks = [check(t) for t in range(args.a2a_trials)]
    worker_emit({"rank": rank, "world": world, "node": node, "sum": float(total), "roundtrip_s": seconds,
                 "checks": checks})  # ends the process group too


if __name__ == "__main__":
    main()
