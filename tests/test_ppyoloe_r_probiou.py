"""ProbIoU as the official loss computes it, and the exact rotated IoU behind assignment and NMS."""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.stats import spearmanr

from replications.ppyoloe_r.boxes import corners, fold_angle, points_in_boxes, polygon_iou, rotated_iou
from replications.ppyoloe_r.probiou import probiou_loss


def random_pairs(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    a = torch.cat([torch.rand(n, 2, generator=g) * 20, torch.rand(n, 2, generator=g) * 15 + 1,
                   torch.rand(n, 1, generator=g) * math.pi], 1)
    b = torch.cat([a[:, :2] + torch.randn(n, 2, generator=g) * 4, a[:, 2:4] * (0.5 + torch.rand(n, 2, generator=g)),
                   a[:, 4:] + torch.randn(n, 1, generator=g)], 1)
    return a.double(), b.double()


def test_identical_boxes_hit_the_official_floor():
    box = torch.tensor([[10.0, 20.0, 30.0, 8.0, 0.4]])
    expected = math.sqrt(1 - math.exp(-1e-3) + 1e-3)  # B_d clipped at eps = 1e-3, then + eps inside the sqrt
    assert abs(float(probiou_loss(box, box)) - expected) < 1e-6
    assert abs(expected - 0.0447) < 1e-4


def test_invariant_to_the_two_equivalences_of_a_rotated_box():
    a, b = random_pairs(500, 0)
    base = probiou_loss(a, b)
    half_turn = b.clone()
    half_turn[:, 4] += math.pi
    swapped = torch.stack([b[:, 0], b[:, 1], b[:, 3], b[:, 2], b[:, 4] + math.pi / 2], 1)
    torch.testing.assert_close(probiou_loss(a, half_turn), base)
    torch.testing.assert_close(probiou_loss(a, swapped), base)
    torch.testing.assert_close(probiou_loss(a, fold_angle(b)), base)


def test_rank_agreement_with_polygon_iou():
    a, b = random_pairs(1000, 1)
    pa, pb = corners(a).reshape(-1, 8).numpy(), corners(b).reshape(-1, 8).numpy()
    iou = np.array([polygon_iou(p, q) for p, q in zip(pa, pb)])
    rho = spearmanr(1 - probiou_loss(a, b).numpy(), iou).statistic
    assert rho > 0.95, rho  # the fact sheet's check of the official loss: 0.993 on 2,000 pairs


def test_finite_gradients_on_square_boxes():
    pred = torch.tensor([[5.0, 5.0, 10.0, 10.0, 0.3], [0.0, 0.0, 4.0, 4.0, 0.0]], requires_grad=True)
    target = torch.tensor([[5.5, 4.0, 10.0, 10.0, 1.2], [0.0, 0.0, 4.0, 4.0, 0.0]])
    probiou_loss(pred, target).sum().backward()
    assert torch.isfinite(pred.grad).all()
    # a square's angle does not change its Gaussian: no gradient reaches theta
    assert abs(float(pred.grad[0, 4])) < 1e-6


def test_loss_grows_with_offset():
    target = torch.tensor([[0.0, 0.0, 20.0, 10.0, 0.5]]).repeat(4, 1)
    pred = target.clone()
    pred[:, 0] += torch.tensor([0.0, 2.0, 5.0, 15.0])
    loss = probiou_loss(pred, target)
    assert (loss[1:] > loss[:-1]).all() and float(loss[-1]) <= 1.0


def test_rotated_iou_matches_shapely():
    a, b = random_pairs(400, 2)
    b[:50] = a[:50]  # identical pairs: IoU 1
    got = rotated_iou(a, b).numpy()
    pa, pb = corners(a).reshape(-1, 8).numpy(), corners(b).reshape(-1, 8).numpy()
    ref = np.array([polygon_iou(p, q) for p, q in zip(pa, pb)])
    np.testing.assert_allclose(got, ref, atol=1e-6)
    assert np.allclose(got[:50], 1.0)


def test_rotated_iou_hand_case_and_broadcasting():
    a = torch.tensor([[0.0, 0.0, 2.0, 2.0, 0.0]])
    b = torch.tensor([[1.0, 0.0, 2.0, 2.0, 0.0], [0.0, 0.0, 2.0, 2.0, math.pi / 4], [10.0, 0.0, 2.0, 2.0, 0.0]])
    # half overlap: 2 / (4 + 4 - 2); a square and its 45-degree turn: octagon 8(sqrt2 - 1) over 8 - that
    octagon = 8 * (math.sqrt(2) - 1)
    expected = torch.tensor([[2 / 6, octagon / (8 - octagon), 0.0]])
    torch.testing.assert_close(rotated_iou(a.unsqueeze(1), b.unsqueeze(0)).float(), expected, atol=1e-6, rtol=0)


def test_points_in_rotated_boxes():
    boxes = torch.tensor([[[0.0, 0.0, 4.0, 2.0, math.pi / 2]]])  # 4 long along y after the quarter turn
    points = torch.tensor([[0.0, 1.9], [0.0, 2.0], [1.5, 0.0], [0.9, 0.0]])
    assert points_in_boxes(points, boxes)[0, 0].tolist() == [True, True, False, True]
