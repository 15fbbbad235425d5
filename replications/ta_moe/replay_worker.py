"""One rank of the all-to-all replay (run by replications/ta_moe/replay.py on the emulated cluster).

    python -m replications.ta_moe.replay_worker --plan plan.json

plan.json: {"d_model": H, "warmup": n, "arms": {arm: [[W x W token counts], ...]}}. For every recorded dispatch
matrix, this rank sends matrix[rank][j] rows of H fp32 values to rank j (an MoE layer's dispatch) and the
same rows back (its combine), as all_to_all_single with those uneven splits; the ranks meet at a barrier
before each, and each matrix's time is the slowest rank's. Emits {arm: [seconds per matrix]} (rank 0).
With `--check`, every matrix is first also sent once as tagged rows (source, destination, index) and checked
on arrival: every rank emits {"times": the above (rank 0) or {}, "checks": {arm: [exact per matrix]}}.

    torchrun --standalone --nproc_per_node=4 -m replications.ta_moe.replay_worker --plan plan.json \
        --ranks-per-node 2 --check --out replay.json      # on torchrun ranks (NCCL on GPUs)

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

from replications.moe.comm_worker import exchange_is_exact, timed_dispatch_combine
from replications.moe.testbed import add_worker_args, ranks_per_node, settle, worker_device, worker_emit, worker_init


def replay(matrix: list[list[int]], rank: int, d_model: int) -> float:
    send = [int(n) for n in matrix[rank]]
    recv = [int(row[rank]) for row in matrix]
    return timed_dispatch_combine(send, recv, d_model)


def tagged(src: int, dest: int, n: int) -> torch.Tensor:
    """n rows from src to dest, each (src, dest, its index): what arrives shows who sent it, to whom, in what order."""
    return torch.stack([torch.full((n,), float(src)), torch.full((n,), float(dest)), torch.arange(n, dtype=torch.float32)], 1)


def replay_is_exact(matrix: list[list[int]], rank: int) -> bool:
    """The matrix's dispatch + combine with tagged rows: rank j's matrix[j][rank] rows reach us, in order."""
    W = len(matrix)
    return exchange_is_exact([tagged(rank, j, int(matrix[rank][j])) for j in range(W)],
                             [tagged(j, rank, int(matrix[j][rank])) for j in range(W)])


def roundtrip_mbit(rank: int, peer: int, mib: float) -> float | None:
    """Rank 0 <-> peer ping-pong of `mib` MiB; Mbit/s on rank 0 (None elsewhere). Best of 3."""
    buf = torch.zeros(int(mib * 2**20) // 4, device=worker_device())
    best = None
    for _ in range(3):
        dist.barrier()
        if rank == 0:
            start = time.perf_counter()
            dist.send(buf, peer)
            dist.recv(buf, peer)
            settle()
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
    parser.add_argument("--check", action="store_true", help="also send every matrix once as tagged rows, checked")
    add_worker_args(parser)
    args = parser.parse_args()
    rank, world, _ = worker_init(timeout_s=120, args=args)
    if args.measure_mib:
        g = ranks_per_node()
        intra = roundtrip_mbit(rank, 1, args.measure_mib) if g > 1 else None
        inter = roundtrip_mbit(rank, g, args.measure_mib) if world > g else None
        worker_emit({"intra": intra, "inter": inter} if rank == 0 else {})  # ends the process group too
        return
    plan = json.loads(open(args.plan).read())
    arms = plan["arms"]
    if any(len(m) != world for matrices in arms.values() for m in matrices):
        raise ValueError(f"the plan's matrices are not {world} x {world}: run as many ranks as were recorded")
    checks = {arm: [replay_is_exact(m, rank) for m in matrices] for arm, matrices in arms.items()} if args.check else {}
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
    result = times if rank == 0 else {}
    worker_emit({"times": result, "checks": checks} if args.check else result)  # ends the process group too


if __name__ == "__main__":
    main()
