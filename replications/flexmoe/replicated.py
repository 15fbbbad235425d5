"""Expert replication for real: an MoE layer whose experts sit on ranks by a placement, a hot expert on several.

RECONSTRUCTION of FlexMoE's replicated expert (no official code): placement[r] lists the experts rank r holds
(its slots); an expert on n ranks has n replicas with identical parameters. Each source rank splits its rows
for expert e (kept, sorted by token) into n near-equal consecutive chunks, chunk i to the i-th replica in rank
order (our choice of split rule; FlexMoE's is not public). After backward, `sync_replicas` all-reduces every
replica's expert gradient inside the expert's replica group (a process group of its ranks), so each replica
holds the gradient of all of the expert's tokens; then the suite's `sync_grads` applies the usual convention
(replicated dense parameters averaged over ranks, expert gradients divided by W). Loss and gradients then
equal the unreplicated layer's (tests/test_flexmoe_replication.py, 4 gloo processes); without the replica
all-reduce each replica would step with a part of its gradient and the replicas would drift apart.
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist
from torch import Tensor, nn

from replications.moe.dist import all_to_all, world
from replications.moe.gates import Gate
from replications.moe.layer import grouped_ffn, kept_by_expert


def check_placement(placement: list[list[int]], num_experts: int, world_size: int) -> None:
    if len(placement) != world_size:
        raise ValueError(f"placement has {len(placement)} ranks, the process group {world_size}")
    for r, slots in enumerate(placement):
        if not slots:
            raise ValueError(f"rank {r} holds no expert; every rank needs at least one slot")
        if len(set(slots)) != len(slots):
            raise ValueError(f"rank {r} holds an expert twice: {slots}")
        if any(not 0 <= e < num_experts for e in slots):
            raise ValueError(f"rank {r} holds an expert outside 0..{num_experts - 1}: {slots}")
    missing = set(range(num_experts)) - {e for slots in placement for e in slots}
    if missing:
        raise ValueError(f"experts {sorted(missing)} are on no rank")


def replica_ranks(placement: list[list[int]], expert: int) -> list[int]:
    return [r for r, slots in enumerate(placement) if expert in slots]


def split_rows(n: int, parts: int) -> list[int]:
    """n rows into `parts` near-equal consecutive chunks, the first ones one larger (torch.tensor_split's rule)."""
    return [n // parts + (i < n % parts) for i in range(parts)]


def slot_counts(counts: list[int], placement: list[list[int]]) -> list[list[int]]:
    """[rank][slot] rows one source sends, from its per-expert row counts: each expert's rows split over its
    replicas in rank order. Shared by the layer and the testbed benchmark (a2a_worker.py)."""
    out = [[0] * len(slots) for slots in placement]
    for e, n in enumerate(counts):
        ranks = replica_ranks(placement, e)
        for r, part in zip(ranks, split_rows(int(n), len(ranks))):
            out[r][placement[r].index(e)] = part
    return out


def init_experts(E: int, d_model: int, d_hidden: int) -> tuple[Tensor, Tensor]:
    """All E experts' matrices drawn as replications.moe.layer.MoELayer draws them (same RNG order), so the
    same seed gives the same experts whatever the placement (the replication test pins the equality)."""
    w1, w2 = torch.empty(E, d_model, d_hidden), torch.empty(E, d_hidden, d_model)
    for e in range(E):
        nn.init.kaiming_uniform_(w1[e].T, a=math.sqrt(5))
        nn.init.kaiming_uniform_(w2[e].T, a=math.sqrt(5))
    return w1, w2


class ReplicatedMoELayer(nn.Module):
    """MoELayer's gate -> sort -> all-to-all -> grouped FFN -> back -> combine, over a placement with replicas."""

    def __init__(self, d_model: int, d_hidden: int, gate: Gate, placement: list[list[int]], group=None):
        super().__init__()
        if gate.residual_branch:
            raise ValueError("replication is implemented for FFN experts, not BASE's residual-branch experts")
        rank, W = world(group)
        E = gate.num_experts
        check_placement(placement, E, W)
        self.d_model, self.num_experts, self.rank, self.world = d_model, E, rank, W
        self.placement = [list(s) for s in placement]
        self.gate, self.group = gate, group
        gate.group = group
        mine = self.placement[rank]
        w1, w2 = init_experts(E, d_model, d_hidden)
        self.w1 = nn.Parameter(w1[mine].clone())
        self.b1 = nn.Parameter(torch.zeros(len(mine), d_hidden))
        self.w2 = nn.Parameter(w2[mine].clone())
        self.b2 = nn.Parameter(torch.zeros(len(mine), d_model))
        for p in (self.w1, self.b1, self.w2, self.b2):
            p.expert = True
        # global slot ids, rank-major; each expert's replicas' slot ids in rank order
        offsets = [sum(len(s) for s in self.placement[:r]) for r in range(W)]
        self.replica_slots = [[offsets[r] + self.placement[r].index(e) for r in replica_ranks(self.placement, e)]
                              for e in range(E)]
        self.slots_per_rank = [len(s) for s in self.placement]
        # one process group per replicated expert; every rank creates every group, in the same order
        self.replica_groups: dict[int, object] = {}
        if W > 1:
            for e in range(E):
                ranks = replica_ranks(self.placement, e)
                if len(ranks) > 1:
                    g = dist.new_group(ranks)
                    if rank in ranks:
                        self.replica_groups[e] = g
        self.last_stats: dict = {}
        self._rows_received = 0

    def forward(self, x: Tensor, token_ids: Tensor | None = None) -> tuple[Tensor, Tensor]:
        shape = x.shape
        xf = x.reshape(-1, self.d_model)
        r = self.gate(xf, token_ids)
        tok, exp, w = kept_by_expert(r)
        counts = torch.bincount(exp, minlength=self.num_experts).tolist()
        v = torch.tensor([s for e, n in enumerate(counts) for s, part in
                          zip(self.replica_slots[e], split_rows(n, len(self.replica_slots[e]))) for _ in range(part)],
                         dtype=torch.long, device=xf.device)  # each row's global slot
        by_slot = torch.argsort(v, stable=True)
        tok, w = tok[by_slot], w[by_slot]
        V = sum(self.slots_per_rank)
        counts_v = torch.bincount(v, minlength=V) if v.numel() else torch.zeros(V, dtype=torch.long)
        h = xf.index_select(0, tok)
        out = self._dispatch(h, counts_v)
        y = torch.zeros_like(xf).index_add(0, tok, (out * w.unsqueeze(1)).to(xf.dtype))
        self.last_stats = {**r.stats, "expert_load": counts, "rows_received": self._rows_received}
        return y.view(shape), r.aux

    def _dispatch(self, h: Tensor, counts_v: Tensor) -> Tensor:
        S = self.slots_per_rank
        if self.world == 1:
            self._rows_received = int(counts_v.sum())
            return grouped_ffn(h, counts_v, self.w1, self.b1, self.w2, self.b2)
        recv_m = counts_v.new_empty(self.world * S[self.rank])
        dist.all_to_all_single(recv_m, counts_v.contiguous(), [S[self.rank]] * self.world, S, group=self.group)
        recv_m = recv_m.view(self.world, S[self.rank])  # [source rank, local slot]
        starts = [sum(S[:j]) for j in range(self.world)]
        send = [int(counts_v[starts[j]:starts[j] + S[j]].sum()) for j in range(self.world)]
        recv = recv_m.sum(1).tolist()
        self._rows_received = int(sum(recv))  # rows this rank's experts compute
        got = all_to_all(h, send, recv, self.group)  # ordered (source rank, local slot)
        local = torch.repeat_interleave(torch.arange(S[self.rank], device=got.device).repeat(self.world),
                                        recv_m.reshape(-1))
        perm = torch.argsort(local, stable=True)  # -> (local slot, source rank)
        out = grouped_ffn(got.index_select(0, perm), recv_m.sum(0), self.w1, self.b1, self.w2, self.b2)
        if got.shape[0] == 0:  # keep the dispatch in this rank's graph: its backward all-to-all must run here too,
            out = out + got.sum()  # or the ranks that did send rows wait for it forever (a zero-row FFN ignores got)
        back = torch.empty_like(out).index_copy(0, perm, out)
        return all_to_all(back, recv, send, self.group)


def sync_replicas(model: nn.Module) -> None:
    """Sum every replicated expert's gradient over its replica group (call before moe.sync_grads)."""
    for layer in model.modules():
        if not isinstance(layer, ReplicatedMoELayer):
            continue
        mine = layer.placement[layer.rank]
        for p in (layer.w1, layer.b1, layer.w2, layer.b2):
            if p.grad is None:
                continue
            for e in sorted(layer.replica_groups):  # expert order on every rank: gloo groups must not cross-wait
                k = mine.index(e)
                g = p.grad[k].contiguous()
                dist.all_reduce(g, group=layer.replica_groups[e])
                p.grad[k].copy_(g)
