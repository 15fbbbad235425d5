"""Worker: the hierarchical all-to-all equals the flat one, forward and backward, for uneven splits.

    python -m replications.moe.a2a_check --trials 3     # as every rank of a testbed or local cluster
    torchrun --standalone --nproc_per_node=4 -m replications.moe.a2a_check --ranks-per-node 2 --out checks.json

Every rank draws the same global send matrix (seeded, with zeros and very uneven rows), sends rows tagged
with their (source, destination, index), and compares flat `dist.all_to_all` with `hierarchical_all_to_all`
(G = LOCAL_WORLD_SIZE): the outputs and the gradients of a random linear function of the outputs must be
identical (bit for bit: both only move rows).
"""

from __future__ import annotations

import argparse

import torch

from replications.moe.dist import all_to_all
from replications.moe.hierarchical import hierarchical_all_to_all
from replications.moe.testbed import add_worker_args, ranks_per_node, worker_device, worker_emit, worker_init


def send_matrix(world: int, trial: int) -> torch.Tensor:
    """[W src, W dest] row counts: trial 0 has zeros (incl. a rank that sends nothing), then random uneven."""
    g = torch.Generator().manual_seed(100 + trial)
    m = torch.randint(0, 7, (world, world), generator=g)
    if trial == 0:
        m[0] = 0  # rank 0 sends nothing
        m[:, -1] = 0  # the last rank receives nothing
        m[-1, 0] = 11
    return m


def check(trial: int, d: int = 3) -> dict:
    import torch.distributed as dist

    rank, world = dist.get_rank(), dist.get_world_size()
    m = send_matrix(world, trial)
    send, recv = m[rank].tolist(), m[:, rank].tolist()
    n = sum(send)
    dest = torch.repeat_interleave(torch.arange(world), m[rank])
    x = torch.stack([torch.full((n,), float(rank)), dest.float(), torch.arange(n, dtype=torch.float32)], 1)
    x = torch.cat([x, torch.randn(n, d, generator=torch.Generator().manual_seed(rank))], 1).to(worker_device())
    xf, xh = x.clone().requires_grad_(), x.clone().requires_grad_()
    of = all_to_all(xf, send, recv)
    oh = hierarchical_all_to_all(xh, send, recv, ranks_per_node())
    wts = torch.randn(of.shape, generator=torch.Generator().manual_seed(1000 + rank)).to(of.device)
    (of * wts).sum().backward()
    (oh * wts).sum().backward()
    src_ok = bool(torch.equal(of[:, 0].cpu(), torch.repeat_interleave(torch.arange(world), m[:, rank]).float()))
    return {"trial": trial, "rows_out": int(of.shape[0]), "forward_equal": bool(torch.equal(of, oh)),
            "backward_equal": bool(torch.equal(xf.grad, xh.grad)), "flat_in_source_order": src_ok,
            "grad_nonzero": bool(n == 0 or xf.grad.abs().sum() > 0)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=3)
    add_worker_args(parser)
    args = parser.parse_args()
    rank, world, node = worker_init(args=args)
    worker_emit({"rank": rank, "node": node, "G": ranks_per_node(), "checks": [check(t) for t in range(args.trials)]})


if __name__ == "__main__":
    main()
