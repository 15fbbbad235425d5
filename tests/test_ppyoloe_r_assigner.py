"""Rotated task-aligned assignment on small hand-built cases."""

from __future__ import annotations

import math

import torch

from replications.ppyoloe_r.assigner import assign

# a 4 x 4 grid of anchor points at 2, 6, 10, 14 (stride 4)
POINTS = torch.stack(torch.meshgrid(torch.arange(4) * 4.0 + 2, torch.arange(4) * 4.0 + 2, indexing="xy"), -1).reshape(-1, 2)


def setup(gt_boxes, gt_labels, pred_boxes=None, scores=None, num_classes=2):
    gt_boxes = torch.tensor(gt_boxes).reshape(1, -1, 5)
    n = gt_boxes.shape[1]
    preds = gt_boxes[0, :1].repeat(16, 1).unsqueeze(0) if pred_boxes is None else pred_boxes
    scores = torch.full((1, 16, num_classes), 0.5) if scores is None else scores
    return scores, preds, POINTS, torch.tensor(gt_labels).reshape(1, n), gt_boxes, torch.ones(1, n)


def test_only_anchors_inside_the_rotated_box_are_positive():
    # a 10 x 3 box along the diagonal through (8, 8): inside are exactly the anchors at (6,6) and (10,10)
    s, p, pts, lab, gt, mask = setup([[8.0, 8.0, 10.0, 3.0, math.pi / 4]], [1])
    labels, boxes, scores = assign(s, p, pts, lab, gt, mask, topk=13)
    positive = (labels[0] != 2).nonzero().flatten().tolist()
    assert sorted(POINTS[positive].tolist()) == [[6.0, 6.0], [10.0, 10.0]]
    assert (labels[0, positive] == 1).all()
    torch.testing.assert_close(boxes[0, positive], gt[0, [0, 0]])
    # predictions equal the box (IoU 1): both positives get soft score 1 in class 1, nothing in class 0
    torch.testing.assert_close(scores[0, positive], torch.tensor([[0.0, 1.0], [0.0, 1.0]]))
    assert float(scores[0].sum()) == 2.0


def test_topk_keeps_the_best_aligned_anchors_and_normalises_to_the_best_iou():
    gt = [[8.0, 8.0, 16.0, 16.0, 0.0]]  # covers every anchor
    preds = torch.tensor(gt).repeat(16, 1)
    preds[:, 2] = 16.0 * torch.linspace(1.0, 0.25, 16)  # IoU with the box falls from 1 to 0.25 along the anchors
    s, p, pts, lab, gtb, mask = setup(gt, [0], preds.unsqueeze(0))
    labels, _, scores = assign(s, p, pts, lab, gtb, mask, topk=3, alpha=1.0, beta=6.0)
    assert (labels[0] != 2).nonzero().flatten().tolist() == [0, 1, 2]
    iou = torch.linspace(1.0, 0.25, 16)[:3]
    t = 0.5 * iou.pow(6)
    torch.testing.assert_close(scores[0, :3, 0], t / t.max() * iou.max(), rtol=1e-4, atol=1e-6)


def test_anchor_claimed_by_two_boxes_goes_to_the_higher_iou():
    # two overlapping boxes both cover anchor (6, 6); predictions at that anchor match box B exactly
    gt = [[6.0, 6.0, 8.0, 8.0, 0.0], [7.0, 7.0, 6.0, 6.0, 0.0]]
    preds = torch.tensor(gt[1]).repeat(16, 1).unsqueeze(0)
    s, p, pts, lab, gtb, mask = setup(gt, [0, 1], preds)
    labels, boxes, _ = assign(s, p, pts, lab, gtb, mask, topk=13)
    k = int(((POINTS - torch.tensor([6.0, 6.0])).abs().sum(1) == 0).nonzero())
    assert int(labels[0, k]) == 1
    torch.testing.assert_close(boxes[0, k], gtb[0, 1])


def test_padding_boxes_assign_nothing():
    s, p, pts, lab, gt, mask = setup([[8.0, 8.0, 16.0, 16.0, 0.0], [8.0, 8.0, 16.0, 16.0, 0.0]], [0, 1])
    mask = torch.tensor([[1.0, 0.0]])
    labels, _, scores = assign(s, p, pts, lab, gt, mask, topk=13)
    assert set(labels[0].tolist()) <= {0, 2} and float(scores[0, :, 1].sum()) == 0.0
