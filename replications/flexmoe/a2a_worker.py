"""One rank of the replicated-expert all-to-all benchmark (run by replications/flexmoe/a2a_bench.py).

    python -m replications.flexmoe.a2a_worker --plan plan.json

plan.json: {"tokens_per_rank", "d_model", "d_hidden", "hot_shares", "placements": {name: [[experts] per rank]},
"trials", "warmup"}. Routing is skewed the same way on every source rank: a share h of its tokens to expert 0,
the rest split evenly over the other experts. Each source splits its rows for an expert over the expert's
replicas exactly as the layer does (replicated.slot_counts), then a dispatch and a combine all_to_all_single
of d_model fp32 values per row run after a barrier; the time is the slowest rank's. Placements alternate
trial by trial so drifts of the shared machine hit all alike. For every replicated expert, its replica
group's gradient all-reduce (2 d_model d_hidden fp32 values, once per step) is timed as well.
Communication only: nothing is computed. Emits (rank 0) {"a2a": {name: {share: [seconds]}}, "allreduce": {...}}.
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import torch.distributed as dist

from replications.flexmoe.replicated import replica_ranks, slot_counts
from replications.moe.comm_worker import timed_dispatch_combine


def skewed_counts(tokens: int, E: int, hot_share: float) -> list[int]:
    hot = int(round(tokens * hot_share))
    rest = [(tokens - hot) // (E - 1) + (i < (tokens - hot) % (E - 1)) for i in range(E - 1)]
    return [hot, *rest]


def splits(counts: list[int], placement: list[list[int]]) -> list[int]:
    """Rows this source sends to each rank (every source routes alike)."""
    return [sum(s) for s in slot_counts(counts, placement)]


def timed_allreduce(buf: torch.Tensor, group, member: bool) -> float:
    dist.barrier()
    start = time.perf_counter()
    if member:
        dist.all_reduce(buf, group=group)
    elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    return float(elapsed)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--plan", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from replications.moe.testbed import worker_emit, worker_init

    rank, world, _ = worker_init(timeout_s=120)
    plan = json.loads(open(args.plan).read())
    placements = plan["placements"]
    E = max(e for p in placements.values() for slots in p for e in slots) + 1
    rows: dict[str, dict[str, list[float]]] = {name: {} for name in placements}
    for share in plan["hot_shares"]:
        counts = skewed_counts(int(plan["tokens_per_rank"]), E, float(share))
        for _ in range(int(plan["warmup"])):
            for p in placements.values():
                s = splits(counts, p)
                timed_dispatch_combine(s, [s[rank]] * world, int(plan["d_model"]))
        for _ in range(int(plan["trials"])):
            for name, p in placements.items():
                s = splits(counts, p)  # every source sends alike, so rank r receives s[r] from each source
                rows[name].setdefault(str(share), []).append(timed_dispatch_combine(s, [s[rank]] * world, int(plan["d_model"])))
    allreduce: dict[str, list[float]] = {}
    for name, p in placements.items():
        for e in range(E):
            ranks = replica_ranks(p, e)
            if len(ranks) < 2:
                continue
            group = dist.new_group(ranks)  # every rank creates it
            buf = torch.ones(2 * int(plan["d_model"]) * int(plan["d_hidden"]))
            timed_allreduce(buf, group, rank in ranks)  # warm-up: connections of the new group
            allreduce[f"{name}/expert{e}"] = [timed_allreduce(buf, group, rank in ranks)
                                              for _ in range(int(plan["trials"]))]
    worker_emit({"a2a": rows, "allreduce": allreduce} if rank == 0 else {})  # ends the process group too


if __name__ == "__main__":
    main()
