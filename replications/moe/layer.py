"""The expert-parallel MoE layer: gate -> sort by expert -> all-to-all -> grouped expert FFN -> back -> combine.

Experts are stored stacked ([E_loc, d, h]) and run as grouped matmuls over the tokens sorted by expert
(torch._grouped_mm; fallback: one batched matmul over a [E_loc, C_max, d] padded buffer), never a Python
loop over experts.
With a process group of W ranks, rank r owns experts r*E_loc .. (r+1)*E_loc-1 (E = W * E_loc).

Gradient convention (what tests/test_moe_distributed.py pins): every rank computes the loss of its own
tokens as a mean (plus the aux loss), calls backward, then ``sync_grads`` averages replicated parameters
over ranks (all-reduce / W) and divides expert gradients by W (they already hold the sum over all ranks'
tokens via the all-to-all's backward). Doing an all-reduce on expert gradients too is the classic
doubled-gradient bug.

Constructing a layer keeps freed CPU memory for reuse, process-wide (shared/allocator.py): its stacked expert
gradients and large token batches are blocks glibc would otherwise map afresh and page-fault on every pass.
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import Tensor, nn

from replications.moe.dist import all_to_all, world
from replications.moe.gates import Gate
from replications.moe.routing import Routing
from shared.allocator import keep_freed_memory


def _segments(ends: list[int]):
    """(group, start, end) of every non-empty group of rows sorted by group, group g ending at ends[g]."""
    for g, (start, end) in enumerate(zip([0, *ends[:-1]], ends)):
        if end > start:
            yield g, start, end


class _GroupedLinear(torch.autograd.Function):
    """x [N, d] (rows sorted by group; group g is rows ends[g-1]..ends[g]) times w [G, d, h], plus each
    group's bias b [G, h] -> [N, h], with one grouped-matmul kernel. The bias is added in place, one
    slice per group, rather than as a gathered [N, h] bias tensor: that gather, its add and its
    scatter-add backward cost ~10 % of the layer on CPU (results/moe/BENCHMARK.md). Backward computes
    only the gradients autograd asks for (an input that needs none costs no matmul)."""

    @staticmethod
    def forward(ctx, x: Tensor, w: Tensor, b: Tensor, offs: Tensor, ends: list[int]) -> Tensor:
        ctx.save_for_backward(x, w, offs)
        ctx.ends = ends
        y = torch._grouped_mm(x, w, offs=offs)
        for g, start, end in _segments(ends):
            y[start:end].add_(b[g])
        return y

    @staticmethod
    def backward(ctx, grad: Tensor):
        x, w, offs = ctx.saved_tensors
        grad = grad.contiguous()
        gx = torch._grouped_mm(grad, w.transpose(1, 2), offs=offs) if ctx.needs_input_grad[0] else None
        gw = torch._grouped_mm(x.t(), grad, offs=offs) if ctx.needs_input_grad[1] else None  # x_g^T grad_g
        gb = None
        if ctx.needs_input_grad[2]:
            gb = grad.new_zeros(w.shape[0], grad.shape[1])  # an empty group's bias gets zeros
            for g, start, end in _segments(ctx.ends):
                torch.sum(grad[start:end], 0, out=gb[g])
        return gx, gw, gb, None, None


class _GroupedAffine(torch.autograd.Function):
    """h [N, d] (rows sorted by group) -> h * gain[g] + bias[g] for each group's rows: BASE's per-expert
    LayerNorm affine, one slice per group rather than gathered [N, d] gain and bias tensors."""

    @staticmethod
    def forward(ctx, h: Tensor, gain: Tensor, bias: Tensor, ends: list[int]) -> Tensor:
        ctx.save_for_backward(h, gain)
        ctx.ends = ends
        out = torch.empty_like(h)
        for g, start, end in _segments(ends):
            torch.mul(h[start:end], gain[g], out=out[start:end])
            out[start:end].add_(bias[g])
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        h, gain = ctx.saved_tensors
        gh = torch.empty_like(grad) if ctx.needs_input_grad[0] else None
        gg = gain.new_zeros(gain.shape) if ctx.needs_input_grad[1] else None
        gb = gain.new_zeros(gain.shape) if ctx.needs_input_grad[2] else None
        for g, start, end in _segments(ctx.ends):
            rows = grad[start:end]
            if gh is not None:
                torch.mul(rows, gain[g], out=gh[start:end])
            if gg is not None:
                torch.sum(rows * h[start:end], 0, out=gg[g])
            if gb is not None:
                torch.sum(rows, 0, out=gb[g])
        return gh, gg, gb, None


def _grouped_mm_works() -> bool:
    """torch._grouped_mm is private; use it only where it runs and agrees with a plain matmul.
    (On CPU it needs row strides that are multiples of 16 bytes: d and h divisible by 4 in fp32.)"""
    try:
        x, w = torch.randn(5, 8), torch.randn(2, 8, 4)
        y = torch._grouped_mm(x, w, offs=torch.tensor([2, 5], dtype=torch.int32))
        return bool(torch.allclose(y, torch.cat([x[:2] @ w[0], x[2:] @ w[1]]), atol=1e-5))
    except (AttributeError, RuntimeError, TypeError):
        return False


GROUPED_MM = _grouped_mm_works()


def grouped_ffn(h: Tensor, counts: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor,
                padded: bool | None = None, norm: tuple[Tensor, Tensor] | None = None) -> Tensor:
    """Rows of h sorted by expert (counts[e] rows for expert e) through their expert's 2-layer GELU FFN.

    norm = (gain [E, d], bias [E, d]): each expert's LayerNorm affine, applied to rows already normalised
    (BASE's per-expert LayerNorm; the normalisation itself needs no parameters, so it runs before dispatch).
    Default: one grouped matmul per FFN matrix over the sorted rows (no padding). Fallback
    (padded=True or no torch._grouped_mm): a batched matmul over a [E, C_max, d] buffer."""
    E = counts.shape[0]
    extra = [] if norm is None else list(norm)
    if h.shape[0] == 0:  # no rows, but keep h in the graph: an expert-parallel rank that received no tokens
        # must still run the all-to-all's backward, or the other ranks wait for it forever (collectives in
        # backward follow each rank's graph, so every rank's graph must have the same collectives)
        return h.new_zeros(0, w2.shape[2]) + 0 * sum(t.sum() for t in (h, w1, b1, w2, b2, *extra))
    offs = counts.cumsum(0).to(torch.int32)
    ends = offs.tolist()
    if norm is not None:
        h = _GroupedAffine.apply(h.contiguous(), norm[0], norm[1], ends)
    kind = h.device.type
    if torch.is_autocast_enabled(kind):  # autocast does not reach the private grouped kernel: cast by hand
        dtype = torch.get_autocast_dtype(kind)
        h, w1, b1, w2, b2 = (t.to(dtype) for t in (h, w1, b1, w2, b2))
    if kind == "cpu":  # CPU kernel: fp32, rows 16-byte aligned
        grouped = GROUPED_MM and h.dtype == torch.float32 and h.shape[1] % 4 == 0 and w1.shape[2] % 4 == 0
    else:  # CUDA kernel: bf16, rows 16-byte aligned
        grouped = GROUPED_MM and h.dtype == torch.bfloat16 and h.shape[1] % 8 == 0 and w1.shape[2] % 8 == 0
    if grouped if padded is None else not padded:
        z = F.gelu(_GroupedLinear.apply(h.contiguous(), w1, b1, offs, ends))
        return _GroupedLinear.apply(z, w2, b2, offs, ends)
    expert = torch.repeat_interleave(torch.arange(E, device=h.device), counts)
    cap = int(counts.max())
    starts = offs.to(counts.dtype) - counts
    slot = expert * cap + (torch.arange(h.shape[0], device=h.device) - starts[expert])
    buf = h.new_zeros(E * cap, h.shape[1]).index_copy(0, slot, h).view(E, cap, -1)
    z = F.gelu(torch.baddbmm(b1.unsqueeze(1), buf, w1))
    out = torch.baddbmm(b2.unsqueeze(1), z, w2)
    return out.reshape(E * cap, -1).index_select(0, slot)


class MoELayer(nn.Module):
    def __init__(self, d_model: int, d_hidden: int, gate: Gate, group=None, a2a: str = "flat",
                 ranks_per_node: int | None = None):
        super().__init__()
        keep_freed_memory()  # once per process; a user's own MALLOC_* setting wins
        rank, W = world(group)
        E = gate.num_experts
        if E % W:
            raise ValueError(f"{E} experts cannot be split over {W} expert-parallel ranks")
        # a2a="hierarchical": HetuMoE's H-A2A over nodes of ranks_per_node ranks (default: LOCAL_WORLD_SIZE)
        if a2a not in ("flat", "hierarchical"):
            raise ValueError(f"a2a must be 'flat' or 'hierarchical', got {a2a!r}")
        if a2a == "hierarchical" and group is not None:
            raise ValueError("a2a='hierarchical' runs over the default process group (group=None)")
        self.a2a, self.ranks_per_node = a2a, ranks_per_node
        self.d_model, self.num_experts, self.local_experts, self.rank, self.world = d_model, E, E // W, rank, W
        self.gate, self.group = gate, group
        gate.group = group
        # Initialise all E experts from the (rank-identical) RNG, keep this rank's slice: the same
        # seed gives the same experts whatever the expert-parallel degree.
        w1 = torch.empty(E, d_model, d_hidden)
        w2 = torch.empty(E, d_hidden, d_model)
        for e in range(E):  # per-expert init, once at construction
            nn.init.kaiming_uniform_(w1[e].T, a=math.sqrt(5))
            nn.init.kaiming_uniform_(w2[e].T, a=math.sqrt(5))
        sl = slice(rank * self.local_experts, (rank + 1) * self.local_experts)
        self.w1 = nn.Parameter(w1[sl].clone())
        self.b1 = nn.Parameter(torch.zeros(self.local_experts, d_hidden))
        self.w2 = nn.Parameter(w2[sl].clone())
        self.b2 = nn.Parameter(torch.zeros(self.local_experts, d_model))
        self.residual_branch = gate.residual_branch
        experts = [self.w1, self.b1, self.w2, self.b2]
        if self.residual_branch:  # BASE (fairseq BaseSublayer): per-expert LayerNorm, second matrix zero
            with torch.no_grad():
                self.w2.zero_()
            self.ln_w = nn.Parameter(torch.ones(self.local_experts, d_model))
            self.ln_b = nn.Parameter(torch.zeros(self.local_experts, d_model))
            experts += [self.ln_w, self.ln_b]
        for p in experts:
            p.expert = True  # sharded over ranks: never all-reduced
        self.last_stats: dict[str, float] = {}

    def forward(self, x: Tensor, token_ids: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """x [..., d] -> (y [..., d], aux loss). token_ids [...] only for the hash gate."""
        shape = x.shape
        xf = x.reshape(-1, self.d_model)
        r = self.gate(xf, token_ids)
        tok, exp, w = kept_by_expert(r)
        counts = torch.bincount(exp, minlength=self.num_experts)
        h = xf.index_select(0, tok)
        if self.residual_branch:
            h = F.layer_norm(h, (self.d_model,))
        if self.world == 1:
            out = grouped_ffn(h, counts, self.w1, self.b1, self.w2, self.b2, norm=self._norm())
        else:
            out = self._expert_parallel(h, counts)
        # under autocast the experts may run in bf16: combine in the input's precision
        # combine into the residual term (BASE, its own residual branch) or into zeros, in place
        y = xf.new_zeros(xf.shape) if r.residual is None else r.residual.unsqueeze(1) * xf
        y = y.index_add_(0, tok, (out * w.unsqueeze(1)).to(xf.dtype))
        self.last_stats = {**r.stats, "expert_load": counts.tolist()}
        return y.view(shape), r.aux

    def _norm(self) -> tuple[Tensor, Tensor] | None:
        return (self.ln_w, self.ln_b) if self.residual_branch else None

    def _expert_parallel(self, h: Tensor, counts: Tensor) -> Tensor:
        W, L = self.world, self.local_experts
        send_m = counts.view(W, L)  # rows we send to each rank, per its local expert
        recv_m = torch.empty_like(send_m)
        dist.all_to_all_single(recv_m, send_m.contiguous(), group=self.group)  # [src rank, local expert]
        send, recv = send_m.sum(1).tolist(), recv_m.sum(1).tolist()
        got = self._all_to_all(h, send, recv)  # ordered (source rank, local expert)
        local = torch.repeat_interleave(torch.arange(L, device=got.device).repeat(W), recv_m.reshape(-1))
        perm = torch.argsort(local, stable=True)  # -> (local expert, source rank)
        out = grouped_ffn(got.index_select(0, perm), recv_m.sum(0), self.w1, self.b1, self.w2, self.b2,
                          norm=self._norm())
        back = torch.empty_like(out).index_copy(0, perm, out)  # undo the permutation
        return self._all_to_all(back, recv, send)

    def _all_to_all(self, x: Tensor, send: list[int], recv: list[int]) -> Tensor:
        if self.a2a == "hierarchical":
            from replications.moe.hierarchical import hierarchical_all_to_all, local_world_size
            return hierarchical_all_to_all(x, send, recv, self.ranks_per_node or local_world_size())
        return all_to_all(x, send, recv, self.group)


def kept_by_expert(r: Routing) -> tuple[Tensor, Tensor, Tensor]:
    """(token, expert, combine weight) of every kept assignment, sorted by expert (stable: token order within
    an expert), the order the grouped expert FFN consumes."""
    tok, slot = r.keep.nonzero(as_tuple=True)
    exp = r.expert[tok, slot]
    order = torch.argsort(exp, stable=True)
    return tok[order], exp[order], r.weight[tok, slot][order]


def sync_grads(model: nn.Module, group=None) -> None:
    """Average replicated parameters' gradients over the expert-parallel ranks; scale expert gradients by 1/W;
    leave `rank_local` parameters (a rank's own router) as they are."""
    _, W = world(group)
    if W == 1:
        return
    for p in model.parameters():
        if p.grad is None or getattr(p, "rank_local", False):  # a rank's own router (TA-MoE local gates)
            continue
        if not getattr(p, "expert", False):
            dist.all_reduce(p.grad, group=group)
        p.grad.div_(W)


def expert_flops(tokens_per_expert: Tensor | list[int], d_model: int, d_hidden: int) -> int:
    """Forward FLOPs spent in experts (2 matmuls, 2 flops per multiply-add)."""
    return int(sum(int(c) for c in tokens_per_expert)) * 4 * d_model * d_hidden
