"""A small GPT whose every FFN is an MoE layer (replications/moe), cut into equal sections of blocks.

Ring-memory inference streams the sections; elastic training trains the whole stack with expert
parallelism. Sections have identical structure so any section's bytes fit any ring slot.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from replications.moe import MoELayer, make_gate


class Block(nn.Module):
    """Pre-LayerNorm block: x + causal attention(LN(x)), then x + MoE(LN(x))."""

    def __init__(self, d_model: int, heads: int, hidden: int, experts: int, gate: str = "switch",
                 gate_options: dict | None = None, group=None):
        super().__init__()
        if d_model % heads:
            raise ValueError(f"d_model {d_model} is not divisible by heads {heads}")
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv, self.proj = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)
        self.moe = MoELayer(d_model, hidden, make_gate(gate, d_model, experts, **(gate_options or {})), group)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(B, T, D))
        y, aux = self.moe(self.ln2(x))
        return x + y, aux


class Section(nn.Module):
    """A run of consecutive blocks: the unit ring memory loads and computes."""

    def __init__(self, blocks: list[Block]):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        aux = x.new_zeros(())
        for block in self.blocks:
            x, a = block(x)
            aux = aux + a
        return x, aux


class MoEStack(nn.Module):
    """Embedding -> sections -> LayerNorm -> tied-free linear head. `layers` blocks in `sections` sections."""

    def __init__(self, vocab: int, d_model: int, heads: int, layers: int, sections: int, hidden: int,
                 experts: int, seq_len: int, gate: str = "switch", gate_options: dict | None = None, group=None):
        super().__init__()
        if layers % sections:
            raise ValueError(f"{layers} layers cannot be cut into {sections} equal sections")
        per = layers // sections
        self.embed, self.pos = nn.Embedding(vocab, d_model), nn.Embedding(seq_len, d_model)
        self.sections = nn.ModuleList(
            Section([Block(d_model, heads, hidden, experts, gate, gate_options, group) for _ in range(per)])
            for _ in range(sections))
        self.ln_f, self.head = nn.LayerNorm(d_model), nn.Linear(d_model, vocab)

    def embed_tokens(self, ids: Tensor) -> Tensor:
        return self.embed(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))

    def logits(self, x: Tensor) -> Tensor:
        return self.head(self.ln_f(x))

    def forward(self, ids: Tensor) -> tuple[Tensor, Tensor]:
        x, aux = self.embed_tokens(ids), 0.0
        for section in self.sections:
            x, a = section(x)
            aux = aux + a
        return self.logits(x), aux
