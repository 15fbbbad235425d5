"""Replication invariance check, launched with torchrun (gloo on CPU):

    torchrun --nproc_per_node=4 -m replications.flexmoe.replica_check --out result.pt [--with-buggy]
    python -m replications.flexmoe.replica_check --out ref.pt --reference     # one process, plain MoELayer

Every rank builds the same model (same seed): a replicated input projection and an E = 4 expert layer, takes
its 1/W slice of one global batch, runs forward and backward, then `sync_replicas` + `sync_grads`. For each
case (gate x placement, PLACEMENTS) rank 0 writes the global loss, the dense gradients, every expert's
gradient (from its first replica) and the largest difference between replicas of one expert; --reference
writes the unreplicated single-process layer's (replications.moe.MoELayer). They must agree.
`--with-buggy` adds a case that skips the replica all-reduce (replicas then hold partial gradients).
Also records each rank's received rows per case, to show that a replica takes part of its expert's tokens.
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn

from replications.flexmoe.replicated import ReplicatedMoELayer, sync_replicas
from replications.moe import MoELayer, make_gate, sync_grads

D, H, E, TOKENS = 8, 16, 4, 32
HOT_BIAS = 1.0  # router bias towards expert 0
GATES = {"switch": ("switch", {"capacity_factor": 1.5}),  # with router jitter: noise drawn for the global batch
         "gshard": ("gshard", {"capacity_factor": 0.75})}  # top-2 with drops: capacity binds
PLACEMENTS = {  # rank -> experts it holds
    "static": [[0], [1], [2], [3]],
    "replicate0": [[0], [1], [2, 0], [3]],  # the hot expert 0 also on rank 2 (the other node of a 2 x 2 layout)
    "replicate_many": [[0, 1], [1, 0], [2, 0], [3, 1]],  # experts 0 and 1 on three ranks each
    "migrated": [[2], [0], [3], [1]],  # every expert moved to another rank
}


def run_case(gate: str, placement: list[list[int]] | None, sync: bool = True) -> dict[str, torch.Tensor]:
    rank, W = (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)
    torch.manual_seed(0)
    proj = nn.Linear(D, D)
    kind, options = GATES[gate]
    g = make_gate(kind, D, E, **options)
    layer = MoELayer(D, H, g) if placement is None else ReplicatedMoELayer(D, H, g, placement)
    g.generator = torch.Generator().manual_seed(2)  # the same noise stream on every rank
    with torch.no_grad():
        g.proj.bias[0] += HOT_BIAS  # expert 0 is the heavy one: the expert a placement would replicate
    model = nn.ModuleDict({"proj": proj, "moe": layer})
    gen = torch.Generator().manual_seed(1)
    x, target = torch.randn(TOKENS, D, generator=gen), torch.randn(TOKENS, D, generator=gen)
    sl = slice(rank * TOKENS // W, (rank + 1) * TOKENS // W)
    y, aux = layer(proj(x[sl]))
    loss = ((y - target[sl]) ** 2).mean() + 0.1 * aux
    loss.backward()
    if placement is not None and sync:
        sync_replicas(model)
    if W > 1:
        sync_grads(model)
    total = loss.detach().clone()
    if W > 1:
        dist.all_reduce(total)
    out = {"loss": total / W, "dropped": torch.tensor(layer.last_stats["dropped_fraction"])}
    for name, p in model.named_parameters():
        if getattr(p, "expert", False):
            continue
        out[f"grad.{name}"] = p.grad.clone()
    for pname in ("w1", "b1", "w2", "b2"):
        grad = getattr(layer, pname).grad
        if placement is None:
            out[f"grad.moe.{pname}"] = grad.clone()
            continue
        full = torch.zeros(E, *grad.shape[1:])
        spread = torch.zeros(())
        mine = placement[rank]
        first = {e: min(r for r, s in enumerate(placement) if e in s) for e in range(E)}
        for k, e in enumerate(mine):
            if first[e] == rank:
                full[e] = grad[k]
        dist.all_reduce(full)
        for k, e in enumerate(mine):  # every replica must hold the same gradient
            spread = torch.maximum(spread, (grad[k] - full[e]).abs().max())
        dist.all_reduce(spread, op=dist.ReduceOp.MAX)
        out[f"grad.moe.{pname}"] = full
        out[f"replica_spread.{pname}"] = spread
    if placement is not None:
        rows = torch.tensor([float(layer.last_stats.get("rows_received", 0))])
        every = [torch.zeros(1) for _ in range(W)]
        dist.all_gather(every, rows)
        out["rows_received"] = torch.cat(every)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--reference", action="store_true", help="one process, the plain MoELayer")
    parser.add_argument("--with-buggy", action="store_true", help="also run replicate0 without the replica all-reduce")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.reference:
        results = {gate: run_case(gate, None) for gate in GATES}
    else:
        dist.init_process_group("gloo")
        results = {f"{gate}/{name}": run_case(gate, p) for gate in GATES for name, p in PLACEMENTS.items()}
        if args.with_buggy:
            results["switch/replicate0_no_replica_sync"] = run_case("switch", PLACEMENTS["replicate0"], sync=False)
    if not dist.is_initialized() or dist.get_rank() == 0:
        tmp = args.out + ".part"
        torch.save(results, tmp)
        os.replace(tmp, args.out)
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
