"""Expert-parallel invariance check, launched with torchrun (gloo on CPU):

    torchrun --nproc_per_node=W -m replications.moe.ep_check --out result.pt [--gates switch,gshard]

Every rank builds the same model (same seed), takes its 1/W slice of one global batch, runs forward and
backward through a replicated input projection and an E-expert MoE layer, and calls sync_grads. Rank 0
writes the global loss, the replicated gradients and every expert's gradient (gathered in expert order)
per gate. The result must not depend on W. `--with-buggy` adds a run that all-reduces expert gradients as well (the
doubled-gradient bug; with sharded experts it sums different experts' gradients)
so the test can show it would catch it.
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn

from replications.moe import MoELayer, make_gate, sync_grads
from replications.moe.dist import all_gather_cat

D, H, E, TOKENS, VOCAB = 8, 16, 4, 32, 40
GATE_OPTIONS = {
    "switch": {"capacity_factor": 0.75},  # small capacity: tokens are dropped, in the same places for every W
    "gshard": {"capacity_factor": 1.0},
    "ktop1": {"k": 2, "capacity_factor": 1.0},
    "sam": {"group_size": 2, "k": 1, "capacity_factor": 1.0},
    "base": {},
    "hash": {"vocab_size": VOCAB},
}


def run_gate(kind: str, buggy: bool) -> dict[str, torch.Tensor]:
    rank, W = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    proj = nn.Linear(D, D)
    layer = MoELayer(D, H, make_gate(kind, D, E, **GATE_OPTIONS[kind]), group=None)
    model = nn.ModuleDict({"proj": proj, "moe": layer})
    g = torch.Generator().manual_seed(1)
    x, target = torch.randn(TOKENS, D, generator=g), torch.randn(TOKENS, D, generator=g)
    ids = torch.randint(0, VOCAB, (TOKENS,), generator=g)
    sl = slice(rank * TOKENS // W, (rank + 1) * TOKENS // W)
    y, aux = layer(proj(x[sl]), ids[sl])
    loss = ((y - target[sl]) ** 2).mean() + 0.1 * aux  # each rank: mean over its own tokens, as in DDP
    loss.backward()
    if buggy:
        for p in layer.parameters():
            if getattr(p, "expert", False) and p.grad is not None:
                dist.all_reduce(p.grad)
    sync_grads(model)
    total = loss.detach().clone()
    dist.all_reduce(total)
    out = {"loss": total / W, "aux": aux.detach()}
    for name, p in model.named_parameters():
        grad = p.grad if p.grad is not None else torch.zeros_like(p)
        out[f"grad.{name}"] = all_gather_cat(grad, None) if getattr(p, "expert", False) else grad
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--gates", default=",".join(GATE_OPTIONS))
    parser.add_argument("--with-buggy", action="store_true", help="also run switch with the doubled-gradient bug")
    args = parser.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    results = {kind: run_gate(kind, False) for kind in args.gates.split(",")}
    if args.with_buggy:
        results["switch_buggy_sync"] = run_gate("switch", True)
    if dist.get_rank() == 0:
        tmp = args.out + ".part"
        torch.save(results, tmp)
        os.replace(tmp, args.out)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
