"""What a gate returns, and the two rules every gate shares: global statistics and capacity.

Statistics (token counts, mean gate probabilities) and capacity positions are taken over the whole
expert-parallel batch -- ranks concatenated in rank order -- so a layer on W ranks routes, drops and
balances exactly as one process holding the concatenated batch would (capacity_scope="global").
capacity_scope="local" applies the capacity to each rank's own tokens, as GShard/Hetu/Paddle do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import Tensor

from replications.moe.dist import all_gather_cat, all_reduce_sum, world


@dataclass
class Routing:
    expert: Tensor  # [T, k] long: the k experts of each token (k = E for dense/dynamic gates)
    weight: Tensor  # [T, k] combine weights (differentiable)
    keep: Tensor  # [T, k] bool: selected and within capacity
    aux: Tensor  # scalar: balance loss (plus a gate's extra loss), already in the paper's scaling
    residual: Tensor | None = None  # [T] coefficient on the input added to the output (BASE: 1 - alpha)
    stats: dict[str, float] = field(default_factory=dict)


def row_softmax(z: Tensor) -> Tensor:
    """Softmax over the last dim of [T, E] router logits. torch's CPU kernel runs scalar code for a last dim
    narrower than one vector register (< 16 fp32 lanes), ~7x slower than the same softmax taken over dim 0
    of the transposed view (measured here: [2048, 8] 411 vs 57 us); wider rows and GPUs take F.softmax."""
    if z.device.type == "cpu" and z.dim() == 2 and z.shape[1] < 16:
        return torch.nn.functional.softmax(z.t(), dim=0).t().contiguous()  # row-major again: later ops read rows
    return torch.nn.functional.softmax(z, dim=-1)


def global_tokens(n_local: int, group=None) -> int:
    if world(group)[1] == 1:
        return n_local
    device = "cuda" if torch.distributed.get_backend(group) == "nccl" else "cpu"
    return int(all_reduce_sum(torch.tensor([float(n_local)], dtype=torch.float64, device=device), group).item())


def global_uniform(n_local: int, cols: int, group=None, generator: torch.Generator | None = None,
                   device: torch.device | str = "cpu") -> Tensor:
    """U(0, 1) noise [n_local, cols] for this rank's rows, cut from one draw over the whole expert-parallel
    batch (ranks in rank order), so a gate's noise does not depend on the expert-parallel degree W.
    With a generator the draw is on CPU (reproducible in tests); otherwise from the device's RNG."""
    rank, W = world(group)
    if W == 1:
        offset, total = 0, n_local
    else:
        ndev = "cuda" if torch.distributed.get_backend(group) == "nccl" else "cpu"
        sizes = all_gather_cat(torch.tensor([n_local], device=ndev), group).tolist()
        offset, total = sum(sizes[:rank]), sum(sizes)
    if generator is not None:
        u = torch.rand(total, cols, generator=generator).to(device)
    else:
        u = torch.rand(total, cols, device=device)
    return u[offset:offset + n_local]


def global_sum(x: Tensor, group=None) -> Tensor:
    """Differentiable sum over ranks of a per-rank statistic."""
    return all_reduce_sum(x, group)


def capacity_positions(expert: Tensor, selected: Tensor, num_experts: int, group=None,
                       scope: str = "global") -> Tensor:
    """Queue position of every (token, slot) in its expert's buffer, slot-major (all first choices
    before any second choice, as GShard/Hetu offset 2nd choices by the 1st-choice counts), then by rank,
    then by token. Unselected slots get a position too but are never counted."""
    T, k = expert.shape
    onehot = torch.nn.functional.one_hot(expert, num_experts) * selected.unsqueeze(-1)  # [T, k, E]
    before_here = onehot.cumsum(0) - onehot  # same slot, earlier local tokens
    per_slot = onehot.sum(0)  # [k, E]
    if scope == "global" and world(group)[1] > 1:
        rank, W = world(group)
        all_counts = all_gather_cat(per_slot.unsqueeze(0), group)  # [W, k, E]
        lower_ranks = all_counts[:rank].sum(0)
        slot_totals = all_counts.sum(0)
    elif scope in ("global", "local"):
        lower_ranks = torch.zeros_like(per_slot)
        slot_totals = per_slot
    else:
        raise ValueError(f"unknown capacity_scope '{scope}'; valid: global, local")
    earlier_slots = slot_totals.cumsum(0) - slot_totals  # [k, E]
    pos = before_here + (lower_ranks + earlier_slots).unsqueeze(0)
    return pos.gather(2, expert.unsqueeze(-1)).squeeze(-1)


def topk_capacity(k: int, tokens: int, num_experts: int, factor: float | None) -> int | None:
    """Hetu TopGate: capacity = k * ceil((T / E) * capacity_factor); None = unlimited."""
    if factor is None:
        return None
    return k * math.ceil(tokens / num_experts * factor)


def apply_capacity(expert: Tensor, selected: Tensor, num_experts: int, capacity: int | None,
                   group=None, scope: str = "global") -> Tensor:
    if capacity is None:
        return selected
    pos = capacity_positions(expert, selected, num_experts, group, scope)
    return selected & (pos < capacity)


def balance_loss(probs: Tensor, expert: Tensor, selected: Tensor, num_experts: int, group=None) -> Tensor:
    """l_aux = E * sum_e m_e * c_e (= E^2 * mean_e) over the global batch; m_e = mean gate prob, c_e = fraction
    of tokens whose given slots chose e (before capacity). GShard/fairseq/FastMoE pass only the first
    choices (slot 0); Hetu's TopGate passes every slot."""
    n = global_tokens(probs.shape[0], group)
    m = global_sum(probs.sum(0), group) / n
    counts = probs.new_zeros(num_experts).index_add_(
        0, expert[selected], torch.ones_like(expert[selected], dtype=probs.dtype))
    c = global_sum(counts, group).detach() / n
    return num_experts * (m * c).sum()
