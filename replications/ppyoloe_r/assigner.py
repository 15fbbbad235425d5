"""Rotated task-aligned assignment (`assigners/rotated_task_aligned_assigner.py`, TOOD's rule on rotated IoU).

For each ground truth: alignment t = score^alpha * IoU^beta over anchors whose point lies inside the rotated
box; the top-k anchors by t are positives; an anchor claimed by several boxes keeps the one of highest IoU.
Soft targets: t normalised per box so its best anchor gets that box's best IoU among its positives.
"""

from __future__ import annotations

import torch

from replications.ppyoloe_r.boxes import points_in_boxes, rotated_iou


@torch.no_grad()
def assign(scores: torch.Tensor, pred_boxes: torch.Tensor, points: torch.Tensor, gt_labels: torch.Tensor,
           gt_boxes: torch.Tensor, gt_mask: torch.Tensor, topk: int = 13, alpha: float = 1.0, beta: float = 6.0,
           eps: float = 1e-9) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """scores [B, L, C] (probabilities), pred_boxes [B, L, 5], points [L, 2], gt_labels [B, n] (long),
    gt_boxes [B, n, 5], gt_mask [B, n] (1 = real box, 0 = padding).
    Returns labels [B, L] (C = background), boxes [B, L, 5], soft scores [B, L, C]."""
    bsz, num_anchors, num_classes = scores.shape
    n = gt_boxes.shape[1]
    if n == 0:
        return (torch.full((bsz, num_anchors), num_classes, dtype=torch.long, device=scores.device),
                pred_boxes.new_zeros(bsz, num_anchors, 5), scores.new_zeros(bsz, num_anchors, num_classes))
    ious = rotated_iou(gt_boxes.unsqueeze(2), pred_boxes.unsqueeze(1))  # [B, n, L]
    ious = torch.where(ious > 1 + eps, torch.zeros_like(ious), ious)
    cls_scores = torch.gather(scores.transpose(1, 2), 1, gt_labels.unsqueeze(-1).expand(-1, -1, num_anchors))
    metrics = cls_scores.pow(alpha) * ious.pow(beta)
    inside = points_in_boxes(points, gt_boxes).float()
    mask = gt_mask.float().unsqueeze(-1)
    k = min(topk, num_anchors)
    idx = (metrics * inside).topk(k, dim=-1).indices
    in_topk = torch.zeros_like(metrics).scatter_(-1, idx, 1.0) * mask
    positive = in_topk * inside * mask  # [B, n, L]
    if (positive.sum(1) > 1).any():
        multiple = (positive.sum(1, keepdim=True) > 1).expand(-1, n, -1)
        best = torch.zeros_like(ious).scatter_(1, ious.argmax(1, keepdim=True), 1.0)
        positive = torch.where(multiple, best, positive)
    has_gt = positive.sum(1) > 0  # [B, L]
    gt_index = positive.argmax(1)  # [B, L]
    labels = torch.gather(gt_labels, 1, gt_index)
    labels = torch.where(has_gt, labels, torch.full_like(labels, num_classes))
    boxes = torch.gather(gt_boxes, 1, gt_index.unsqueeze(-1).expand(-1, -1, 5))
    onehot = torch.nn.functional.one_hot(labels, num_classes + 1)[..., :num_classes].float()
    metrics = metrics * positive
    norm = metrics / (metrics.amax(-1, keepdim=True) + eps) * (ious * positive).amax(-1, keepdim=True)
    return labels, boxes, onehot * norm.amax(1).unsqueeze(-1)
