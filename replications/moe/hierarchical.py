"""HetuMoE's hierarchical all-to-all (H-A2A), with uneven splits, as a drop-in for `dist.all_to_all`.

Same contract as `replications.moe.dist.all_to_all(x, send, recv)`: rows x[sum(send[:j]):sum(send[:j+1])]
go to global rank j, the result stacks what every rank sent us in source-rank order. Ranks are grouped
into N nodes of G consecutive ranks (rank = node * G + local); local rank 0 of each node is its leader.
The steps follow Hetu's `HAllToAllOp` (hetu/v1/python/hetu/gpu_ops/HAllToAll.py):

1. gather: every rank sends its whole send buffer (and its send/recv counts) to its node's leader;
2. layout transform on the leader: (source local, destination node, destination local) ->
   (destination node, destination local, source local), so each remote node's data is contiguous;
3. all-to-all among the N leaders only: N(N-1) large inter-node messages instead of W(W-1) small ones
   (Hetu: NCCL send/recv among leaders; here gloo isend/irecv, receives posted first);
4. reverse transform: (source node, destination local, source local) -> (destination local, source rank);
5. scatter: each local rank gets its rows, already in flat all-to-all order.

Hetu pads every buffer to the same size (capacity); here the counts travel with the data (step 1 gathers
each local rank's send and recv vectors, which is all the leader needs), so uneven splits work and the
result equals the flat all-to-all row for row. Backward is another H-A2A with send and recv swapped
(the transpose of a permutation of rows). Pure data movement: bit-exact against the flat version.
"""

from __future__ import annotations

import os
import time

import torch
import torch.distributed as dist
from torch import Tensor


class Hierarchy:
    """An N x G layout of the default group: rank = node * G + local, local 0 leads. Every exchange is
    point to point between global ranks, so no sub-groups (and no collective setup) are needed."""

    def __init__(self, ranks_per_node: int):
        rank, world = dist.get_rank(), dist.get_world_size()
        if ranks_per_node < 1 or world % ranks_per_node:
            raise ValueError(f"world size {world} is not a multiple of ranks_per_node={ranks_per_node}")
        G = ranks_per_node
        self.G, self.N, self.rank, self.world = G, world // G, rank, world
        self.node, self.local = divmod(rank, G)
        self.leader = self.node * G  # global rank of this node's leader
        self.leaders = list(range(0, world, G))


def local_world_size() -> int:
    """G when not given: torchrun's (and the testbed's) LOCAL_WORLD_SIZE, else the whole world (one node)."""
    return int(os.environ.get("LOCAL_WORLD_SIZE", dist.get_world_size()))


_CACHE: dict[int, Hierarchy] = {}


def hierarchy(ranks_per_node: int) -> Hierarchy:
    """One Hierarchy per G per process."""
    if ranks_per_node not in _CACHE:
        _CACHE[ranks_per_node] = Hierarchy(ranks_per_node)
    return _CACHE[ranks_per_node]


def segment_permutation(sizes: Tensor, axes: tuple[int, ...]) -> Tensor:
    """Row indices that reorder a buffer made of segments laid out as the grid `sizes` (row-major, each
    entry a segment's row count) into the grid order `sizes.permute(axes)`."""
    flat = sizes.reshape(-1)
    starts = (flat.cumsum(0) - flat).view(sizes.shape).permute(axes).reshape(-1)
    new = sizes.permute(axes).reshape(-1)
    offset_in_new = new.cumsum(0) - new
    total = int(new.sum())
    return torch.repeat_interleave(starts - offset_in_new, new, output_size=total) + torch.arange(total, device=sizes.device)


def _p2p(pairs: list[tuple[str, Tensor, int]]) -> None:
    """Post every recv, then every send (global peer ranks), then wait; empty tensors are skipped on both
    sides. Receives go first: gloo's `all_to_all_single` posts its send to a peer before the receive, which
    on one TCP connection made the two directions take turns (measured on the testbed: 8 MiB each way
    between two nodes at 400 Mbit/s took 330 ms send-first, 165 ms receive-first, i.e. full duplex)."""
    ordered = [p for p in pairs if p[0] == "recv"] + [p for p in pairs if p[0] == "send"]
    reqs = [(dist.irecv if kind == "recv" else dist.isend)(t, peer) for kind, t, peer in ordered if t.numel() > 0]
    for req in reqs:
        req.wait()


class _Clock:
    def __init__(self, timings: dict[str, float] | None):
        self.timings, self.last = timings, time.perf_counter()

    def mark(self, phase: str) -> None:
        if self.timings is not None:
            now = time.perf_counter()
            self.timings[phase] = self.timings.get(phase, 0.0) + now - self.last
            self.last = now


def hierarchical_all_to_all_raw(x: Tensor, send: list[int], recv: list[int], h: Hierarchy,
                                timings: dict[str, float] | None = None) -> Tensor:
    """The forward data movement (no autograd). `timings`: seconds per phase are added to it (gather,
    layout, exchange, reverse, scatter), so a benchmark can tell network phases from memory copies."""
    clock = _Clock(timings)
    G, N, W = h.G, h.N, h.world
    if len(send) != W or len(recv) != W:
        raise ValueError(f"send/recv must have one count per rank ({W}), got {len(send)}/{len(recv)}")
    x = x.contiguous()
    row = x.shape[1:]
    counts = torch.tensor([send, recv], dtype=torch.int64, device=x.device)  # [2, W]; NCCL moves GPU tensors only
    is_leader = h.local == 0
    # 1. gather counts, then data, to the leader
    if is_leader:
        all_counts = [counts] + [torch.empty_like(counts) for _ in range(G - 1)]
        _p2p([("recv", all_counts[m], h.leader + m) for m in range(1, G)])
    else:
        _p2p([("send", counts, h.leader)])
    if not is_leader:
        _p2p([("send", x, h.leader)])
        clock.mark("gather")
        out = x.new_empty((sum(recv), *row))
        _p2p([("recv", out, h.leader)])  # 5. (non-leader side) scatter, after the leaders' exchange
        clock.mark("scatter")
        return out
    S = torch.stack([c[0] for c in all_counts])  # [G src local, W dest]: rows each local rank sends
    R = torch.stack([c[1] for c in all_counts])  # [G dest local, W src]: rows each local rank receives
    parts = [x] + [x.new_empty((int(S[m].sum()), *row)) for m in range(1, G)]
    _p2p([("recv", parts[m], h.leader + m) for m in range(1, G)])
    clock.mark("gather")
    gathered = torch.cat(parts)  # (src local, dest node, dest local)
    # 2. layout transform: each destination node's rows contiguous, ordered (dest local, src local)
    grid = S.view(G, N, G)
    perm = segment_permutation(grid, (1, 2, 0))
    outgoing = gathered.index_select(0, perm)
    send_nodes = grid.sum((0, 2)).tolist()  # rows to each node
    # what node b sends us, ordered (our local m, b's local l): R[m, b*G + l]
    in_grid = R.view(G, N, G).permute(1, 0, 2)  # [src node, dest local, src local]
    recv_nodes = in_grid.sum((1, 2)).tolist()
    clock.mark("layout")
    # 3. inter-node all-to-all among leaders (point to point, receives posted first: see _p2p)
    incoming = outgoing.new_empty((sum(recv_nodes), *row))
    out_chunks, in_chunks = outgoing.split(send_nodes), incoming.split(recv_nodes)
    in_chunks[h.node].copy_(out_chunks[h.node])
    _p2p([("recv", in_chunks[b], h.leaders[b]) for b in range(N) if b != h.node]
         + [("send", out_chunks[b].contiguous(), h.leaders[b]) for b in range(N) if b != h.node])
    clock.mark("exchange")
    # 4. reverse transform: (src node, dest local, src local) -> (dest local, src node, src local)
    back = incoming.index_select(0, segment_permutation(in_grid.contiguous(), (1, 0, 2)))
    # 5. scatter: local m's rows, in flat all-to-all (source rank) order
    sizes = R.sum(1).tolist()
    chunks = list(back.split(sizes))
    clock.mark("reverse")
    _p2p([("send", chunks[m].contiguous(), h.leader + m) for m in range(1, G)])
    out = chunks[0].clone()
    clock.mark("scatter")
    return out


class _HierarchicalAllToAll(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, send: list[int], recv: list[int], h: Hierarchy) -> Tensor:
        ctx.send, ctx.recv, ctx.h = send, recv, h
        return hierarchical_all_to_all_raw(x, send, recv, h)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return hierarchical_all_to_all_raw(grad, ctx.recv, ctx.send, ctx.h), None, None, None


def hierarchical_all_to_all(x: Tensor, send: list[int], recv: list[int], ranks_per_node: int) -> Tensor:
    """Differentiable H-A2A over the default group, G = ranks_per_node consecutive ranks per node."""
    return _HierarchicalAllToAll.apply(x, send, recv, hierarchy(ranks_per_node))
