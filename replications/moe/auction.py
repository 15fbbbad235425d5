"""BASE layer's balanced assignment: every expert gets exactly T/E tokens, maximising sum of scores.

Bertsekas' auction for the transportation problem with E "objects" of capacity C = T/E, run in
Jacobi (all unassigned tokens bid at once) rounds, vectorised over tokens; eps = (max - min)/50
floored at 1e-4 as in the official BalanceGate (HetuMoE fact sheet). The result is within T*eps
of the optimum (auction's eps-complementary-slackness bound).
"""

from __future__ import annotations

import torch
from torch import Tensor


@torch.no_grad()
def balanced_assignment(scores: Tensor, max_rounds: int = 100000) -> Tensor:
    """scores [T, E] -> expert index [T] with bincount exactly T/E per expert."""
    T, E = scores.shape
    if T % E:
        raise ValueError(f"BASE needs the token count ({T}) divisible by the expert count ({E})")
    C = T // E
    s = scores.double()
    eps = max(float(s.max() - s.min()) / 50, 1e-4)
    price = torch.zeros(E, dtype=s.dtype)
    owner = torch.full((T,), -1, dtype=torch.long)  # expert of each token, -1 = unassigned
    bid_of = torch.zeros(T, dtype=s.dtype)  # the price each assigned token paid
    for _ in range(max_rounds):
        free = (owner < 0).nonzero().squeeze(1)
        if free.numel() == 0:
            return owner
        value = s[free] - price
        top2 = value.topk(min(2, E), dim=1)
        best = top2.indices[:, 0]
        second = top2.values[:, 1] if E > 1 else top2.values[:, 0] - eps
        bid = price[best] + (top2.values[:, 0] - second) + eps
        # Each expert keeps the C highest bids among its holders and the new bidders.
        cand = torch.cat([(owner >= 0).nonzero().squeeze(1), free])
        cand_exp = torch.cat([owner[owner >= 0], best])
        cand_bid = torch.cat([bid_of[owner >= 0], bid])
        order = torch.argsort(cand_bid, descending=True, stable=True)
        order = order[torch.argsort(cand_exp[order], stable=True)]  # grouped by expert, bids descending
        exp_sorted = cand_exp[order]
        start = torch.searchsorted(exp_sorted, torch.arange(E))
        rank_in = torch.arange(order.numel()) - start[exp_sorted]
        keep = rank_in < C
        owner[cand] = -1
        owner[cand[order[keep]]] = exp_sorted[keep]
        bid_of[cand[order[keep]]] = cand_bid[order[keep]]
        # A full expert's price is the lowest bid it holds; it only ever rises.
        full_lowest = torch.full((E,), float("-inf"), dtype=s.dtype)
        last = keep & (rank_in == C - 1)
        full_lowest[exp_sorted[last]] = cand_bid[order[last]]
        price = torch.maximum(price, full_lowest)
    raise RuntimeError(f"auction did not converge in {max_rounds} rounds")
