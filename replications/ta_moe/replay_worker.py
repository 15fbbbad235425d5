"""One rank of the all-to-all replay (run by replications/ta_moe/replay.py on the emulated cluster).

    python -m replications.ta_moe.replay_worker --plan plan.json

plan.json: {"d_model": H, "warmup": n, "arms": {arm: [[W x W token counts], ...]}}. For every recorded dispatch
matrix, this rank sends matrix[rank][j] rows of H fp32 values to rank j (an MoE layer's dispatch) and the
same rows back (its combine), as all_to_all_single with those uneven splits; the ranks meet at a barrier
before each, and each matrix's time is the slowest rank's. Emits {arm: [seconds per matrix]} (rank 0).

    python -m replications.ta_moe.replay_worker --measure-mib 16

measures the link bandwidths instead: rank 0 sends 16 MiB to rank 1 (same node) and to the first rank of
the next node, each sends it back; Mbit/s = 2 x size / round trip, best of 3. Emits {"intra": .., "inter": ..}.
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import torch.distributed as dist

from replications.moe.comm_worker import timed_dispatch_combine


def replay(matrix: list[list[int]], rank: int, d_model: int) -> float:
    send = [int(n) for n in matrix[rank]]
    recv = [int(row[rank]) for row in matrix]
    return timed_dispatch_combine(send, recv, d_model)


def roundtrip_mbit(rank: int, peer: int, mib: float) -> float | None:
    """Rank 0 <-> peer ping-pong of `mib` MiB; Mbit/s on rank 0 (None elsewhere). Best of 3."""
    buf = torch.zeros(int(mib * 2**20) // 4)
    best = None
    for _ in range(3):
        dist.barrier()
        if rank == 0:
            start = time.perf_counter()
            dist.send(buf, peer)
            dist.recv(buf, peer)
            seconds = time.perf_counter() - start
            best = seconds if best is None else min(best, seconds)
        elif rank == peer:
            dist.recv(buf, 0)
            dist.send(buf, 0)
    return None if best is None else 2 * buf.numel() * 4 * 8 / best / 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--plan")
    parser.add_argument("--measure-mib", type=float, default=0.0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from replications.moe.testbed import ranks_per_node, worker_emit, worker_init

    rank, world, _ = worker_init(timeout_s=120)
    if args.measure_mib:
        g = ranks_per_node()
        intra = roundtrip_mbit(rank, 1, args.measure_mib) if g > 1 else None
        inter = roundtrip_mbit(rank, g, args.measure_mib) if world > g else None
        worker_emit({"intra": intra, "inter": inter} if rank == 0 else {})  # ends the process group too
        return
    plan = json.loads(open(args.plan).read())
    arms = plan["arms"]
    for matrices in arms.values():  # the same warm-up for every arm: connections open, buffers touched
        for m in matrices[:plan["warmup"]]:
            replay(m, rank, plan["d_model"])
    # interleave the arms matrix by matrix, so that drifts of the shared machine hit all alike
    times: dict[str, list[float]] = {arm: [] for arm in arms}
    n = max(len(m) for m in arms.values())
    for i in range(n):
        for arm, matrices in arms.items():
            if i < len(matrices):
                times[arm].append(replay(matrices[i], rank, plan["d_model"]))
    worker_emit(times if rank == 0 else {})  # ends the process group too


if __name__ == "__main__":
    main()
