"""The tagger: pretrained text encoder + LayoutLM-style 2D position embeddings + the multi-grained unit layers.

Re-implemented from the ERNIE-mmLayout abstract (no code or equations are available): coarse-grained units are
aggregated from their fine-grained tokens (mean pooling), processed by Transformer layers over the units (with
each unit's bounding box embedded), and fused back into every member token (residual + LayerNorm) before the
token classifier. The same module serves every arm; only the unit assignment differs, so the control arm
(every token its own unit) has exactly the parameters of the mmLayout arm. There is no visual branch.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import BertModel

COORDS = 1001  # normalised coordinates 0..1000 (replications.mmlayout.boxes.SCALE)


class LayoutEmbedding(nn.Module):
    """LayoutLM's 2D position embedding: x0, y0, x1, y1 (shared x and y tables), width and height; trained from
    scratch here (LayoutLM pre-trains them)."""

    def __init__(self, dim: int, init_std: float = 0.02):
        super().__init__()
        self.x, self.y, self.w, self.h = (nn.Embedding(COORDS, dim) for _ in range(4))
        for table in (self.x, self.y, self.w, self.h):
            nn.init.normal_(table.weight, std=init_std)

    def forward(self, bbox: torch.Tensor) -> torch.Tensor:
        x0, y0, x1, y1 = bbox.clamp(0, COORDS - 1).unbind(-1)
        return (self.x(x0) + self.y(y0) + self.x(x1) + self.y(y1)
                + self.w((x1 - x0).clamp(0, COORDS - 1)) + self.h((y1 - y0).clamp(0, COORDS - 1)))


def pool_units(hidden: torch.Tensor, units: torch.Tensor, bbox: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Mean of member tokens per unit. hidden (B, T, D), units (B, T) with -1 for none, bbox (B, T, 4).
    Returns unit states (B, M, D), unit mask (B, M) and unit boxes (B, M, 4) = the union of member boxes,
    where M is the largest number of units in the batch."""
    b, t, d = hidden.shape
    m = int(units.max().item()) + 1 if units.numel() and units.max() >= 0 else 1
    slot = torch.where(units >= 0, units, torch.full_like(units, m))  # tokens of no unit go to a dropped slot
    sums = hidden.new_zeros(b, m + 1, d).scatter_add_(1, slot.unsqueeze(-1).expand(-1, -1, d), hidden)
    counts = hidden.new_zeros(b, m + 1).scatter_add_(1, slot, torch.ones_like(slot, dtype=hidden.dtype))
    mask = counts[:, :m] > 0
    pooled = sums[:, :m] / counts[:, :m].clamp(min=1).unsqueeze(-1)
    big = torch.iinfo(bbox.dtype).max if not bbox.is_floating_point() else float("inf")
    idx = slot.unsqueeze(-1).expand(-1, -1, 2)
    lo = bbox.new_full((b, m + 1, 2), big).scatter_reduce_(1, idx, bbox[..., :2], "amin", include_self=True)
    hi = bbox.new_zeros(b, m + 1, 2).scatter_reduce_(1, idx, bbox[..., 2:], "amax", include_self=True)
    boxes = torch.cat([lo[:, :m], hi[:, :m]], -1) * mask.unsqueeze(-1)
    return pooled, mask, boxes


def broadcast_units(unit_states: torch.Tensor, units: torch.Tensor) -> torch.Tensor:
    """Each token's unit state (B, T, D); zeros for tokens of no unit."""
    d = unit_states.shape[-1]
    gathered = unit_states.gather(1, units.clamp(min=0).unsqueeze(-1).expand(-1, -1, d))
    return gathered * (units >= 0).unsqueeze(-1).to(unit_states.dtype)


class UnitLayers(nn.Module):
    """Aggregate tokens into units, run `layers` Transformer layers over the units, fuse back into the tokens."""

    def __init__(self, dim: int, layers: int, heads: int, ff_dim: int, dropout: float):
        super().__init__()
        self.box = nn.Linear(6, dim)  # unit box (x0, y0, x1, y1, w, h) / 1000
        self.norm_in = nn.LayerNorm(dim)
        layer = nn.TransformerEncoderLayer(dim, heads, ff_dim, dropout, activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.fuse = nn.Linear(dim, dim)
        self.norm_out = nn.LayerNorm(dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, hidden: torch.Tensor, units: torch.Tensor, bbox: torch.Tensor) -> torch.Tensor:
        pooled, mask, boxes = pool_units(hidden, units, bbox)
        x0, y0, x1, y1 = (boxes.to(hidden.dtype) / 1000).unbind(-1)
        geometry = torch.stack([x0, y0, x1, y1, x1 - x0, y1 - y0], -1)
        states = self.encoder(self.norm_in(pooled + self.box(geometry)), src_key_padding_mask=~mask)
        return self.norm_out(hidden + self.drop(self.fuse(broadcast_units(states, units))))


class Tagger(nn.Module):
    def __init__(self, backbone: BertModel, num_labels: int, unit_layers: int = 1, unit_heads: int | None = None,
                 unit_ff_dim: int | None = None, dropout: float = 0.1):
        super().__init__()
        cfg = backbone.config
        self.backbone = backbone
        self.layout = LayoutEmbedding(cfg.hidden_size, cfg.initializer_range)
        self.units = UnitLayers(cfg.hidden_size, unit_layers, unit_heads or cfg.num_attention_heads,
                                unit_ff_dim or cfg.intermediate_size, dropout)
        self.drop = nn.Dropout(dropout)
        self.classifier = nn.Linear(cfg.hidden_size, num_labels)

    def forward(self, input_ids: torch.Tensor, bbox: torch.Tensor, attention_mask: torch.Tensor,
                units: torch.Tensor) -> torch.Tensor:
        embeds = self.backbone.embeddings.word_embeddings(input_ids) + self.layout(bbox)
        hidden = self.backbone(inputs_embeds=embeds, attention_mask=attention_mask).last_hidden_state
        return self.classifier(self.drop(self.units(hidden, units, bbox)))

    def new_parameters(self) -> list[nn.Parameter]:
        """Parameters trained from scratch (everything outside the pretrained encoder)."""
        pretrained = {id(p) for p in self.backbone.parameters()}
        return [p for p in self.parameters() if id(p) not in pretrained]


def count_parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())
