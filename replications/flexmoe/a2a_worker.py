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
With `--check`, each (placement, share) is first also sent once as tagged rows (source, expert, token index) and
every rank adds {"checks": {name: {share: exact}}}: from every source it got exactly its replicas' share of
each expert's rows, and all ranks together got every row once.

    torchrun --standalone --nproc_per_node=4 -m replications.flexmoe.a2a_worker --plan plan.json --check \
        --out replica_a2a_raw.json     # on torchrun ranks (NCCL on GPUs)
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import torch.distributed as dist

from replications.flexmoe.replicated import replica_ranks, slot_counts
from replications.moe.comm_worker import exchange_is_exact, slowest, timed_dispatch_combine
from replications.moe.testbed import add_worker_args, settle, worker_device, worker_emit, worker_init


def skewed_counts(tokens: int, E: int, hot_share: float) -> list[int]:
    hot = int(round(tokens * hot_share))
    rest = [(tokens - hot) // (E - 1) + (i < (tokens - hot) % (E - 1)) for i in range(E - 1)]
    return [hot, *rest]


def splits(counts: list[int], placement: list[list[int]]) -> list[int]:
    """Rows this source sends to each rank (every source routes alike)."""
    return [sum(s) for s in slot_counts(counts, placement)]


def replica_rows(src: int, counts: list[int], placement: list[list[int]]) -> list[torch.Tensor]:
    """The rows `src` sends to each rank, tagged (src, expert, index among src's rows for that expert): each
    expert's rows split over its replicas in rank order by slot_counts, consecutive chunks as the layer takes them."""
    sizes = slot_counts(counts, placement)
    taken = [0] * len(counts)  # rows of each expert already given to earlier replicas
    out = []
    for r, slots in enumerate(placement):
        parts = [torch.empty(0, 3)]
        for k, e in enumerate(slots):
            n = sizes[r][k]
            idx = torch.arange(taken[e], taken[e] + n, dtype=torch.float32)
            parts.append(torch.stack([torch.full((n,), float(src)), torch.full((n,), float(e)), idx], 1))
            taken[e] += n
        out.append(torch.cat(parts))
    return out


def replicas_get_their_rows(counts: list[int], placement: list[list[int]], rank: int) -> bool:
    """One tagged dispatch + combine, checked: every source's rows reach this rank exactly as replica_rows says,
    and summed over ranks each expert received every source's rows for it (W x counts[e]) once."""
    W = len(placement)
    expected = [replica_rows(j, counts, placement)[rank] for j in range(W)]
    exact = exchange_is_exact(replica_rows(rank, counts, placement), expected)
    per_expert = torch.bincount(torch.cat(expected)[:, 1].long(), minlength=len(counts)).to(worker_device())
    dist.all_reduce(per_expert)
    return exact and per_expert.tolist() == [W * n for n in counts]


def timed_allreduce(buf: torch.Tensor, group, member: bool) -> float:
    dist.barrier()
    settle()
    start = time.perf_counter()
    if member:
        dist.all_reduce(buf, group=group)
    settle()
    return slowest(time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--plan", required=True)
    parser.add_argument("--check", action="store_true", help="also send every placement's rows once, tagged, and check them")
    add_worker_args(parser)
    args = parser.parse_args()
    rank, world, _ = worker_init(timeout_s=120, args=args)
    plan = json.loads(open(args.plan).read())
    placements = plan["placements"]
    if any(len(p) != world for p in placements.values()):
        raise ValueError(f"the plan places experts on other than {world} ranks: run as many ranks as it has")
    E = max(e for p in placements.values() for slots in p for e in slots) + 1
    rows: dict[str, dict[str, list[float]]] = {name: {} for name in placements}
    checks: dict[str, dict[str, bool]] = {name: {} for name in placements}
    for share in plan["hot_shares"]:
        counts = skewed_counts(int(plan["tokens_per_rank"]), E, float(share))
        if args.check:
            for name, p in placements.items():
                checks[name][str(share)] = replicas_get_their_rows(counts, p, rank)
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
            buf = torch.ones(2 * int(plan["d_model"]) * int(plan["d_hidden"]), device=worker_device())
            timed_allreduce(buf, group, rank in ranks)  # warm-up: connections of the new group
            allreduce[f"{name}/expert{e}"] = [timed_allreduce(buf, group, rank in ranks)
                                              for _ in range(int(plan["trials"]))]
    result = {"a2a": rows, "allreduce": allreduce} if rank == 0 else {}
    worker_emit({**result, "checks": checks} if args.check else result)  # ends the process group too


if __name__ == "__main__":
    main()
