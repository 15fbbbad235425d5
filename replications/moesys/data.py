"""A planted-signal token stream: a first-order Markov chain over `vocab` tokens, each token followed by one of
`branching` successors (uniformly). A language model that learns the chain reaches ln(branching) nats per
token; one that learns nothing stays at ln(vocab). Batches are a pure function of (seed, step), so a run that
restarts from a checkpoint, on any number of ranks, reads exactly the batches an uninterrupted run reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class MarkovTokens:
    vocab: int
    branching: int
    chain_seed: int

    def __post_init__(self) -> None:
        if not 1 <= self.branching <= self.vocab:
            raise ValueError(f"branching must be in [1, vocab={self.vocab}], got {self.branching}")

    @property
    def successors(self) -> Tensor:
        """[vocab, branching]: the tokens that may follow each token."""
        g = torch.Generator().manual_seed(self.chain_seed)
        return torch.stack([torch.randperm(self.vocab, generator=g)[:self.branching] for _ in range(self.vocab)])

    @property
    def entropy(self) -> float:
        """Nats per token of the chain: the lowest cross-entropy any model can reach (after the first token)."""
        return math.log(self.branching)

    def batch(self, seed: int, step: int, rows: int, length: int) -> Tensor:
        """[rows, length] token ids, a pure function of (seed, step)."""
        g = torch.Generator().manual_seed(seed * 1_000_003 + step)
        succ = self.successors
        out = torch.empty(rows, length, dtype=torch.long)
        out[:, 0] = torch.randint(0, self.vocab, (rows,), generator=g)
        choice = torch.randint(0, self.branching, (rows, length), generator=g)
        for t in range(1, length):
            out[:, t] = succ[out[:, t - 1], choice[:, t]]
        return out
