"""Expert-parallel invariance check, launched with torchrun (gloo on CPU):

    torchrun --nproc_per_node=W -m replications.moe.ep_check --out result.pt [--gates switch,gshard] [--emulate W]
        [--a2a hierarchical --ranks-per-node G] [--experts E]

Every rank builds the same model (same seed), takes its 1/W slice of one global batch, runs forward and
backward through a replicated input projection and an E-expert MoE layer, and calls sync_grads. Rank 0
writes the global loss, the replicated gradients and every expert's gradient (gathered in expert order)
per case (gate and options, CASES). The result must not depend on W (the topology gates, whose
statistics are per rank by design, are compared with their one-process emulation of W ranks).
`--a2a hierarchical` dispatches with HetuMoE's H-A2A over nodes of G ranks (replications/moe/hierarchical.py):
the same invariance must hold. `--experts` changes E (default 4; 8 lets W = 8 run).
`--with-buggy` adds a run that all-reduces expert gradients as well (the doubled-gradient bug; with sharded
experts it sums different experts' gradients) so the test can show it would catch it.
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
CASES = {  # name: (gate, options); small capacities drop tokens, in the same places for every W
    "switch": ("switch", {"capacity_factor": 0.75}),  # with Switch jitter (noise drawn for the global batch)
    "gshard": ("gshard", {"capacity_factor": 1.0}),  # fairseq's sampled second expert
    "gshard_drop": ("gshard", {"capacity_factor": 0.5}),  # top-2 dropping first and second choices
    "gshard_random": ("gshard", {"capacity_factor": 0.75, "second_policy": "random"}),
    "gshard_hetu": ("gshard", {"capacity_factor": 0.5, "variant": "hetu"}),
    "ktop1": ("ktop1", {"k": 2, "capacity_factor": 1.0}),
    "sam": ("sam", {"group_size": 2, "k": 1, "capacity_factor": 1.0}),
    "base": ("base", {}),
    "hash": ("hash", {"vocab_size": VOCAB}),
    "dts": ("dts", {}),  # soft phase: Gumbel noise, dynamic number of experts
    "dts_hard": ("dts", {}),  # hard phase: top-1 of the Gumbel sample
    "topology": ("topology", {"capacity_rate": (0.3, 0.6)}),  # per-rank statistics: see emulate
    "fastermoe_topology": ("fastermoe_topology", {"ranks_per_node": 2, "off_node_ratio": 0.25}),
}
PER_RANK = ("topology", "fastermoe_topology")


LAYER: dict = {}  # MoELayer options from the command line (a2a, ranks_per_node)


def build(name: str, topo_world: int) -> MoELayer:
    kind, options = CASES[name]
    if kind == "topology":
        ranks = torch.arange(topo_world, dtype=torch.float32)
        options = {**options, "topology": (ranks[:, None] - ranks[None, :]).abs(), "world_size": topo_world}
    if kind == "fastermoe_topology":
        options = {**options, "ranks_per_node": min(options["ranks_per_node"], topo_world), "world_size": topo_world}
    layer = MoELayer(D, H, make_gate(kind, D, E, **options), group=None, **LAYER)
    if kind == "base":  # its second matrix starts at zero (fairseq): give it values, the same for every W
        full = torch.randn(E, H, D, generator=torch.Generator().manual_seed(3)) * 0.1
        with torch.no_grad():
            layer.w2.copy_(full[layer.rank * layer.local_experts:(layer.rank + 1) * layer.local_experts])
    if kind == "dts":
        layer.gate.generator = torch.Generator().manual_seed(2)  # the same stream on every rank
        layer.gate.temperature, layer.gate.mode = 0.7, ("hard" if name == "dts_hard" else "soft")
    return layer


def run_gate(name: str, buggy: bool, emulate: int = 1) -> dict[str, torch.Tensor]:
    """emulate > 1 (W = 1 only): the per-rank gates (PER_RANK) read one process's batch as `emulate` ranks'
    batches (their world_size); W real ranks must give the same loss and gradients."""
    rank, W = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    proj = nn.Linear(D, D)
    layer = build(name, max(W, emulate))
    model = nn.ModuleDict({"proj": proj, "moe": layer})
    g = torch.Generator().manual_seed(1)
    x, target = torch.randn(TOKENS, D, generator=g), torch.randn(TOKENS, D, generator=g)
    ids = torch.randint(0, VOCAB, (TOKENS,), generator=g)
    sl = slice(rank * TOKENS // W, (rank + 1) * TOKENS // W)
    y, aux = layer(proj(x[sl]), ids[sl])
    # each rank: mean over its own tokens, as in DDP (one process emulating equal ranks: the same mean)
    loss = ((y - target[sl]) ** 2).mean() + 0.1 * aux
    mean_aux = aux.detach().clone()  # per-rank gates: each rank's own loss; compare their mean
    dist.all_reduce(mean_aux)
    mean_aux /= W
    dropped0 = layer.last_stats["dropped_fraction"] if emulate == 1 else _rank0_dropped(layer, proj(x), emulate)
    loss.backward()
    if buggy:
        for p in layer.parameters():
            if getattr(p, "expert", False) and p.grad is not None:
                dist.all_reduce(p.grad)
    sync_grads(model)
    total = loss.detach().clone()
    dist.all_reduce(total)
    out = {"loss": total / W, "aux": mean_aux, "dropped_rank0": torch.tensor(dropped0)}
    for pname, p in model.named_parameters():
        grad = p.grad if p.grad is not None else torch.zeros_like(p)
        out[f"grad.{pname}"] = all_gather_cat(grad, None) if getattr(p, "expert", False) else grad
    return out


def _rank0_dropped(layer: MoELayer, h: torch.Tensor, emulate: int) -> float:
    with torch.no_grad():
        r = layer.gate(h)
    n = h.shape[0] // emulate
    sel, keep = torch.ones_like(r.keep[:n]), r.keep[:n]
    return float((sel & ~keep).sum()) / float(sel.sum())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--gates", default=",".join(CASES), help="case names (CASES)")
    parser.add_argument("--emulate", type=int, default=1, help="W = 1 only: run the cases as this many ranks")
    parser.add_argument("--a2a", choices=["flat", "hierarchical"], default="flat")
    parser.add_argument("--ranks-per-node", type=int, default=None, help="G for --a2a hierarchical")
    parser.add_argument("--experts", type=int, default=None, help="E (default 4)")
    parser.add_argument("--with-buggy", action="store_true", help="also run switch with the doubled-gradient bug")
    args = parser.parse_args()
    if args.experts:
        globals()["E"] = args.experts
    LAYER.update(a2a=args.a2a, ranks_per_node=args.ranks_per_node)
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    results = {name: run_gate(name, False, args.emulate) for name in args.gates.split(",")}
    if args.with_buggy:
        results["switch_buggy_sync"] = run_gate("switch", True)
    if dist.get_rank() == 0:
        tmp = args.out + ".part"
        torch.save(results, tmp)
        os.replace(tmp, args.out)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
