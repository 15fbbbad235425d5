"""GAGA's sequence Transformer (official modules/models.py + modules/embedding.py, re-implemented)."""

from __future__ import annotations

import torch
from torch import nn

from replications.gaga.grouping import N_GROUPS


class GroupEncoder(nn.Module):
    """Sec. 4.3: Linear+ReLU projection plus learnable hop, relation and group encodings, then dropout.

    Token order per relation: [centre, (hop 1: -, +, *), (hop 2: -, +, *), ...]. The centre token gets hop
    index 0 and the "unknown" group index (the last one), as in the official CustomEncoder.
    """

    def __init__(self, feat_dim: int, emb_dim: int, hops: int, relations: int, dropout: float):
        super().__init__()
        self.proj = nn.Sequential(nn.Linear(feat_dim, emb_dim), nn.ReLU())
        self.hop = nn.Embedding(hops + 1, emb_dim)
        self.relation = nn.Embedding(relations, emb_dim)
        self.group = nn.Embedding(N_GROUPS, emb_dim)
        self.dropout = nn.Dropout(dropout)
        per_rel = 1 + hops * N_GROUPS
        hop_idx = torch.cat([torch.zeros(1, dtype=torch.long), torch.arange(1, hops + 1).repeat_interleave(N_GROUPS)])
        grp_idx = torch.cat([torch.tensor([N_GROUPS - 1]), torch.arange(N_GROUPS).repeat(hops)])
        self.register_buffer("hop_idx", hop_idx.repeat(relations), persistent=False)
        self.register_buffer("grp_idx", grp_idx.repeat(relations), persistent=False)
        self.register_buffer("rel_idx", torch.arange(relations).repeat_interleave(per_rel), persistent=False)

    def forward(self, seq: torch.Tensor) -> torch.Tensor:  # (B, S, F) -> (B, S, E)
        pos = self.hop(self.hop_idx) + self.relation(self.rel_idx) + self.group(self.grp_idx)
        return self.dropout(self.proj(seq) + pos)


class GAGA(nn.Module):
    """Post-LN TransformerEncoder over the group sequence; the centre token of every relation,
    concatenated (agg_type 'cat'), goes through one Linear layer to 2 logits."""

    def __init__(self, feat_dim: int, emb_dim: int, ff_dim: int, layers: int, heads: int, hops: int,
                 relations: int, dropout: float, n_classes: int = 2):
        super().__init__()
        self.encoder = GroupEncoder(feat_dim, emb_dim, hops, relations, dropout)
        layer = nn.TransformerEncoderLayer(emb_dim, heads, ff_dim, dropout, batch_first=True)  # relu, post-LN
        self.transformer = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.per_rel = 1 + hops * N_GROUPS
        self.head = nn.Linear(emb_dim * relations, n_classes)
        for p in self.parameters():  # official init_weights: xavier_uniform_ on every matrix
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def forward(self, seq: torch.Tensor) -> torch.Tensor:
        out = self.transformer(self.encoder(seq))
        centres = out[:, :: self.per_rel]  # (B, R, E)
        return self.head(centres.reshape(centres.shape[0], -1))
