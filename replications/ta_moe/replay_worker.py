"""One rank of the all-to-all replay (run by replications/ta_moe/replay.py on the emulated cluster).

    python -m replications.ta_moe.replay_worker --plan plan.json

plan.json: {"d_model": H, "warmup": n, "arms": {arm: [[W x W token counts], ...]}}. For every recorded dispatch
matrix, this rank sends matrix[rank][j] rows of H fp32 values to rank j (an MoE layer's dispatch) and the
same rows back (its combine), as all_to_all_single with those uneven splits; the ranks meet at a barrier
before each, and each matrix's time is the slowest rank's. Emits {arm: [seconds per matrix]} (rank 0).
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import torch.distributed as dist


def replay(matrix: list[list[int]], rank: int, d_model: int) -> float:
    send = [int(n) for n in matrix[rank]]
    recv = [int(row[rank]) for row in matrix]
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--plan", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from replications.moe.testbed import worker_emit, worker_init

    rank, world, _ = worker_init(timeout_s=120)
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
    worker_emit(times if rank == 0 else {})
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
