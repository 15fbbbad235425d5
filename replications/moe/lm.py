"""A small GPT-style decoder (pre-LN, causal attention) whose feed-forward blocks are dense or MoE.

The LM of the MoE papers' WikiText-2 protocol (EvoMoE's, also trained by TA-MoE).

Output: an adaptive softmax over the full 33,278-word vocabulary (exact normalised probabilities, so the
perplexity is the standard full-vocabulary one) -- our choice: a full 33k softmax would take ~90% of the
FLOPs of a model this small on CPU. Without cutoffs (the character-level protocol, 65 symbols) a full softmax
whose matrix is the input embedding (nanoGPT's weight tying); ``init_std`` then gives nanoGPT's GPT-2 init.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from replications.moe import MoELayer, make_gate


class DenseFFN(nn.Module):
    def __init__(self, d: int, h: int):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, h), nn.Linear(h, d)

    def forward(self, x: Tensor, token_ids: Tensor | None = None) -> tuple[Tensor, Tensor]:
        return self.fc2(F.gelu(self.fc1(x))), x.new_zeros(())


class Block(nn.Module):
    def __init__(self, d: int, heads: int, ffn: nn.Module, dropout: float):
        super().__init__()
        # BASE's layer is its own residual branch (x + alpha * FFN_e(LN_e(x)), fairseq base_layer.py): it takes
        # the raw residual stream. fairseq inserts it as an extra layer; here it takes the FFN's place so
        # every model has the same depth and active compute.
        self.own_residual = bool(getattr(ffn, "residual_branch", False))
        self.ln1 = nn.LayerNorm(d)
        self.ln2 = None if self.own_residual else nn.LayerNorm(d)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.heads, self.ffn, self.drop = heads, ffn, nn.Dropout(dropout)

    def forward(self, x: Tensor, ids: Tensor) -> tuple[Tensor, Tensor]:
        B, L, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, L, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, L, D)
        x = x + self.drop(self.out(a))
        if self.own_residual:
            return self.ffn(x, ids)
        y, aux = self.ffn(self.ln2(x), ids)
        return x + self.drop(y), aux


class GPT(nn.Module):
    def __init__(self, vocab: int, d: int, heads: int, layers: int, seq_len: int, ffn_hidden: int,
                 gate: str | None, num_experts: int, gate_options: dict, cutoffs: list[int] | None,
                 div_value: float | None, dropout: float, init_std: float | None = None):
        super().__init__()
        self.embed, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq_len, d)
        blocks = []
        for _ in range(layers):
            if gate is None:
                ffn: nn.Module = DenseFFN(d, ffn_hidden)
            else:
                ffn = MoELayer(d, ffn_hidden, make_gate(gate, d, num_experts, **gate_options))
            blocks.append(Block(d, heads, ffn, dropout))
        self.blocks = nn.ModuleList(blocks)
        self.ln = nn.LayerNorm(d)
        # no cutoffs: logits = h @ embed.weight^T (tied, so no head parameters of its own)
        self.head = None if cutoffs is None else nn.AdaptiveLogSoftmaxWithLoss(d, vocab, cutoffs=cutoffs,
                                                                             div_value=div_value)
        self.drop = nn.Dropout(dropout)
        if init_std is not None:
            self.gpt2_init(init_std)

    @torch.no_grad()
    def gpt2_init(self, std: float) -> None:
        """nanoGPT's init: every matmul and embedding weight N(0, std), biases zero, and the two projections
        back into the residual stream (attention out, FFN second matrix) N(0, std / sqrt(2 layers)). The default
        init (embedding N(0, 1)) would make a tied head's first logits huge. Gates keep their own init; BASE's
        zero second matrix stays zero."""
        small = std / math.sqrt(2 * len(self.blocks))
        nn.init.normal_(self.embed.weight, std=std)
        nn.init.normal_(self.pos.weight, std=std)
        for b in self.blocks:
            for lin, s in ((b.qkv, std), (b.out, small)):
                nn.init.normal_(lin.weight, std=s)
                nn.init.zeros_(lin.bias)
            if isinstance(b.ffn, DenseFFN):
                for lin, s in ((b.ffn.fc1, std), (b.ffn.fc2, small)):
                    nn.init.normal_(lin.weight, std=s)
                    nn.init.zeros_(lin.bias)
            elif isinstance(b.ffn, MoELayer):
                nn.init.normal_(b.ffn.w1, std=std)
                if not b.ffn.residual_branch:
                    nn.init.normal_(b.ffn.w2, std=small)

    def moe_layers(self) -> list[MoELayer]:
        return [b.ffn for b in self.blocks if isinstance(b.ffn, MoELayer)]

    def forward(self, ids: Tensor, targets: Tensor) -> tuple[Tensor, Tensor]:
        """Mean next-token NLL (nats) over ids [B, L] -> targets [B, L], and the summed aux loss."""
        x = self.drop(self.embed(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device)))
        aux = x.new_zeros(())
        for block in self.blocks:
            x, a = block(x, ids)
            aux = aux + a
        # the adaptive softmax in fp32 outside autocast: torch's module mixes dtypes under bf16 autocast,
        # and an fp32 output softmax is what mixed-precision LM training keeps anyway
        with torch.autocast(ids.device.type, enabled=False):
            h = self.ln(x.float()).reshape(-1, x.shape[-1])
            if self.head is None:
                nll = F.cross_entropy(h @ self.embed.weight.t(), targets.reshape(-1))
            else:
                nll = self.head(h, targets.reshape(-1)).loss
        return nll, aux
