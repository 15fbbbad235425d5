"""The PP-YOLOE-R training loss (`PPYOLOERHead.get_loss`) and the ablation's two alternatives.

Official: varifocal classification loss (alpha 0.75, gamma 2) on the assigner's soft targets, ProbIoU on
positives weighted by their target score, both divided by the sum of target scores (>= 1); DFL on the angle
bins (cross-entropy to the two bins around theta / (pi/180), clipped to 89.99), averaged over positives;
weights class 1.0, iou 2.5, dfl 0.05.
Ablation: box="smooth_l1" replaces ProbIoU by smooth-L1 on (x, y, w, h) / stride and theta (radians);
angle="direct" (head built with angle="direct") has no DFL term.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from replications.ppyoloe_r.assigner import assign
from replications.ppyoloe_r.model import RotatedHead
from replications.ppyoloe_r.probiou import probiou_loss

WEIGHTS = {"class": 1.0, "iou": 2.5, "dfl": 0.05}  # ppyoloe_r_crn.yml loss_weight


def varifocal(logits: torch.Tensor, target: torch.Tensor, onehot: torch.Tensor, alpha: float = 0.75,
              gamma: float = 2.0) -> torch.Tensor:
    """Sum of the official _varifocal_loss (BCE on sigmoid scores), computed from logits for stability."""
    score = torch.sigmoid(logits)
    weight = alpha * score.pow(gamma) * (1 - onehot) + target * onehot
    return (F.binary_cross_entropy_with_logits(logits, target, reduction="none") * weight.detach()).sum()


def angle_dfl(angle_logits: torch.Tensor, theta: torch.Tensor, angle_max: int = 90) -> torch.Tensor:
    """Distribution focal loss of theta over bins of pi/(2*angle_max), mean over boxes (official _df_loss)."""
    t = (theta / (math.pi / 2 / angle_max)).clamp(0, angle_max - 0.01)
    left = t.long()
    w_left = (left + 1).float() - t
    return (F.cross_entropy(angle_logits, left, reduction="none") * w_left
            + F.cross_entropy(angle_logits, left + 1, reduction="none") * (1 - w_left)).mean()


def smooth_l1_box(pred: torch.Tensor, target: torch.Tensor, stride: torch.Tensor) -> torch.Tensor:
    """Per-box smooth-L1 (beta 1) summed over x, y, w, h (in strides) and theta (radians)."""
    p = torch.cat([pred[..., :4] / stride, pred[..., 4:]], -1)
    t = torch.cat([target[..., :4] / stride, target[..., 4:]], -1)
    return F.smooth_l1_loss(p, t, reduction="none").sum(-1)


def detection_loss(head: RotatedHead, out: dict[str, torch.Tensor], gt_labels: torch.Tensor, gt_boxes: torch.Tensor,
                   gt_mask: torch.Tensor, box: str = "probiou", assigner: dict | None = None) -> dict[str, torch.Tensor]:
    if box not in ("probiou", "smooth_l1"):
        raise ValueError(f"box loss must be 'probiou' or 'smooth_l1', got {box!r}")
    pred_boxes = head.decode(out)
    logits = out["cls_logits"]
    labels, t_boxes, t_scores = assign(torch.sigmoid(logits).detach(), pred_boxes.detach(), out["points"],
                                       gt_labels, gt_boxes, gt_mask, **(assigner or {}))
    nc = head.num_classes
    onehot = F.one_hot(labels, nc + 1)[..., :nc].float()
    score_sum = t_scores.sum().clamp(min=1.0)
    loss_cls = varifocal(logits, t_scores, onehot) / score_sum
    pos = labels != nc
    zero = pred_boxes.sum() * 0.0
    loss_box, loss_dfl = zero, zero
    if pos.any():
        weight = t_scores.sum(-1)[pos]
        if box == "probiou":
            per_box = probiou_loss(pred_boxes[pos], t_boxes[pos])
        else:
            per_box = smooth_l1_box(pred_boxes[pos], t_boxes[pos], out["strides"].expand(pos.shape[0], -1, -1)[pos])
        loss_box = (per_box * weight).sum() / score_sum
        if head.angle == "dfl":
            loss_dfl = angle_dfl(out["angle_logits"][pos], t_boxes[pos][:, 4], head.angle_max)
    total = WEIGHTS["class"] * loss_cls + WEIGHTS["iou"] * loss_box + WEIGHTS["dfl"] * loss_dfl
    return {"loss": total, "loss_cls": loss_cls.detach(), "loss_box": loss_box.detach(), "loss_dfl": loss_dfl.detach()}
