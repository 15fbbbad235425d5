"""BASE layer's balanced assignment: every expert gets exactly T/E tokens, maximising sum of scores.

Bertsekas' auction for the transportation problem with E "objects" of capacity C = T/E, run in
Jacobi (all unassigned tokens bid at once) rounds, vectorised over tokens; eps = (max - min)/50
floored at 1e-4 as in the official BalanceGate (HetuMoE fact sheet). The result is within T*eps
of the optimum (auction's eps-complementary-slackness bound).

The rounds run in NumPy: each is ~25 small array operations on a few thousand elements, where
torch's per-operation dispatch cost dominated (a 2048 x 8 auction took ~17 ms in torch, ~3 ms here).
The arithmetic and the orderings are the earlier torch version's, so the assignment is the same,
except where one token's scores tie exactly: a bid now goes to the lowest such expert (torch.topk's
choice among ties is unspecified).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor


@torch.no_grad()
def balanced_assignment(scores: Tensor, max_rounds: int = 100000) -> Tensor:
    """scores [T, E] -> expert index [T] (int64, on scores' device) with bincount exactly T/E per expert."""
    T, E = scores.shape
    if T % E:
        raise ValueError(f"BASE needs the token count ({T}) divisible by the expert count ({E})")
    C = T // E
    s = scores.detach().to("cpu", torch.float64).numpy()
    eps = max(float(s.max() - s.min()) / 50, 1e-4)
    price = np.zeros(E)
    owner = np.full(T, -1, dtype=np.int64)  # expert of each token, -1 = unassigned
    bid_of = np.zeros(T)  # the price each assigned token paid
    experts = np.arange(E)
    small = np.uint8 if E <= 256 else np.uint16  # expert ids as a radix-sortable key
    for _ in range(max_rounds):
        free = np.flatnonzero(owner < 0)
        if free.size == 0:
            return torch.from_numpy(owner).to(scores.device)
        value = s[free] - price
        best = value.argmax(1)
        top = value[np.arange(free.size), best]
        if E > 1:
            value[np.arange(free.size), best] = -np.inf
            second = value.max(1)
        else:
            second = top - eps
        bid = price[best] + (top - second) + eps
        # Each expert keeps the C highest bids among its holders and the new bidders.
        held = np.flatnonzero(owner >= 0)
        cand = np.concatenate([held, free])
        cand_exp = np.concatenate([owner[held], best])
        cand_bid = np.concatenate([bid_of[held], bid])
        order = _by_expert_then_bid(cand_exp, cand_bid, small)
        exp_sorted = cand_exp[order]
        rank_in = np.arange(order.size) - np.searchsorted(exp_sorted, experts)[exp_sorted]
        keep = rank_in < C
        owner[cand] = -1
        owner[cand[order[keep]]] = exp_sorted[keep]
        bid_of[cand[order[keep]]] = cand_bid[order[keep]]
        # A full expert's price is the lowest bid it holds; it only ever rises.
        full_lowest = np.full(E, -np.inf)
        last = keep & (rank_in == C - 1)
        full_lowest[exp_sorted[last]] = cand_bid[order[last]]
        price = np.maximum(price, full_lowest)
    raise RuntimeError(f"auction did not converge in {max_rounds} rounds")


def _by_expert_then_bid(expert: np.ndarray, bid: np.ndarray, small: type) -> np.ndarray:
    """The order np.lexsort((-bid, expert)) gives (by expert, bids descending, ties in candidate order),
    ~5x faster: a quicksort of the bids is that order whenever no two bids are equal (checked; a tie
    takes the stable sort), then a stable radix sort by expert id keeps it within each expert."""
    neg = -bid
    order = np.argsort(neg)
    ranked = neg[order]
    if (ranked[1:] == ranked[:-1]).any():
        order = np.argsort(neg, kind="stable")
    return order[np.argsort(expert[order].astype(small), kind="stable")]
