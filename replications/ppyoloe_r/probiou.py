"""ProbIoU (Llerena et al., 2021) as PP-YOLOE-R computes it (`losses/probiou_loss.py`, mode 'l1').

Each box is a 2-D Gaussian with covariance R diag(w^2/12, h^2/12) R^T; the loss is the Hellinger distance
sqrt(1 - exp(-B_d) + eps) of the Bhattacharyya distance B_d, with B_d clipped to [eps, 100]. The floor is
part of the official loss: identical boxes give sqrt(1 - exp(-1e-3) + 1e-3) = 0.0447, never 0.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def covariance(boxes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(a, b, c) of the rotated covariance [[a, c], [c, b]] for [..., 5] boxes."""
    w2, h2 = boxes[..., 2].pow(2) / 12.0, boxes[..., 3].pow(2) / 12.0
    cos, sin = torch.cos(boxes[..., 4]), torch.sin(boxes[..., 4])
    a = w2 * cos.pow(2) + h2 * sin.pow(2)
    b = w2 * sin.pow(2) + h2 * cos.pow(2)
    c = (w2 - h2) * cos * sin
    return a, b, c


def bhattacharyya(pred: torch.Tensor, target: torch.Tensor, eps: float = 1e-3) -> torch.Tensor:
    x1, y1, x2, y2 = pred[..., 0], pred[..., 1], target[..., 0], target[..., 1]
    a1, b1, c1 = covariance(pred)
    a2, b2, c2 = covariance(target)
    t1 = 0.25 * ((a1 + a2) * (y1 - y2).pow(2) + (b1 + b2) * (x1 - x2).pow(2)) + 0.5 * ((c1 + c2) * (x2 - x1) * (y1 - y2))
    t2 = (a1 + a2) * (b1 + b2) - (c1 + c2).pow(2)
    t3 = 0.5 * torch.log(t2 / (4 * torch.sqrt(F.relu((a1 * b1 - c1 * c1) * (a2 * b2 - c2 * c2))) + eps))
    return (t1 / t2 + t3).clamp(min=eps, max=100.0)


def probiou_loss(pred: torch.Tensor, target: torch.Tensor, eps: float = 1e-3) -> torch.Tensor:
    """Per-pair loss in [0.0447, 1]: [..., 5] x [..., 5] -> [...]."""
    return torch.sqrt(1.0 - torch.exp(-bhattacharyya(pred, target, eps)) + eps)
