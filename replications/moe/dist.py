"""Differentiable collectives for expert parallelism (gloo on CPU, NCCL on GPU).

Each backward is the transpose of its forward: all-to-all's transpose is the reverse all-to-all,
all-reduce(sum)'s transpose is all-reduce(sum). Getting these right is what keeps gradients
independent of the expert-parallel degree (see tests/test_moe_distributed.py).
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import Tensor


def world(group=None) -> tuple[int, int]:
    """(rank, world size) of `group`; (0, 1) when torch.distributed is not initialised."""
    if group is None and not dist.is_initialized():
        return 0, 1
    return dist.get_rank(group), dist.get_world_size(group)


class _AllToAll(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, send: list[int], recv: list[int], group) -> Tensor:
        ctx.send, ctx.recv, ctx.group = send, recv, group
        out = x.new_empty((sum(recv), *x.shape[1:]))
        dist.all_to_all_single(out, x.contiguous(), recv, send, group=group)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        back = grad.new_empty((sum(ctx.send), *grad.shape[1:]))
        dist.all_to_all_single(back, grad.contiguous(), ctx.send, ctx.recv, group=ctx.group)
        return back, None, None, None


def all_to_all(x: Tensor, send: list[int], recv: list[int], group=None) -> Tensor:
    """Rows x[sum(send[:j]):sum(send[:j+1])] go to rank j; the result stacks what each rank sent us."""
    return _AllToAll.apply(x, send, recv, group)


class _AllReduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, group) -> Tensor:
        ctx.group = group
        out = x.clone()
        dist.all_reduce(out, group=group)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        out = grad.clone()
        dist.all_reduce(out, group=ctx.group)
        return out, None


def all_reduce_sum(x: Tensor, group=None) -> Tensor:
    """Sum over ranks, differentiable; identity on a single process."""
    if world(group)[1] == 1:
        return x
    return _AllReduce.apply(x, group)


def all_gather_cat(x: Tensor, group=None) -> Tensor:
    """Concatenate equally-shaped tensors from every rank in rank order (no gradient)."""
    if world(group)[1] == 1:
        return x
    parts = [torch.empty_like(x) for _ in range(world(group)[1])]
    dist.all_gather(parts, x.contiguous(), group=group)
    return torch.cat(parts)
