"""Procedural data, augmentation geometry, the three training losses, NMS, determinism and a planted signal."""

from __future__ import annotations

import math

import pytest
import torch

from replications.ppyoloe_r.boxes import corners
from replications.ppyoloe_r.loss import detection_loss
from replications.ppyoloe_r.model import PPYOLOER
from replications.ppyoloe_r.synthetic import CLASS_NAMES, CLASSES, generate
from replications.ppyoloe_r.train import augment, collate, fit, map_on, nms_rotated


def test_generator_is_deterministic_and_well_formed():
    a, b, c = generate(6, 64, seed=3), generate(6, 64, seed=3), generate(6, 64, seed=4)
    assert torch.equal(a.images, b.images) and all(torch.equal(x, y) for x, y in zip(a.boxes, b.boxes))
    assert not torch.equal(a.images, c.images)
    d = generate(40, 96, seed=0)
    boxes, labels = torch.cat(d.boxes), torch.cat(d.labels)
    assert ((boxes[:, 4] >= 0) & (boxes[:, 4] < math.pi / 2)).all()
    pts = corners(boxes)
    assert (pts >= -1e-4).all() and (pts <= 96 + 1e-4).all()
    aspect = torch.maximum(boxes[:, 2], boxes[:, 3]) / torch.minimum(boxes[:, 2], boxes[:, 3])
    for k, name in enumerate(CLASS_NAMES):
        lo, hi = CLASSES[name][0]
        sel = labels == k
        assert sel.any(), name
        assert ((aspect[sel] >= lo - 1e-4) & (aspect[sel] <= hi + 1e-4)).all(), name
    assert sum(CLASSES[n][0][1] <= 1.15 for n in CLASS_NAMES) == 2  # the two near-square classes


def _point_set(pts: torch.Tensor) -> torch.Tensor:
    return torch.tensor(sorted(pts.round(decimals=4).tolist()))


def test_augmentation_moves_boxes_with_pixels():
    size = 16
    img = torch.zeros(3, size, size, dtype=torch.uint8)
    img[:, 2, 5] = 255  # pixel centre (x, y) = (5.5, 2.5)
    box = torch.tensor([[5.5, 2.5, 4.0, 2.0, 0.3]])
    seen = set()
    for seed in range(40):
        out, b = augment(img, box, torch.Generator().manual_seed(seed))
        row, col = (out[0] == 255).nonzero()[0].tolist()
        torch.testing.assert_close(b[0, :2], torch.tensor([col + 0.5, row + 0.5]))
        # the corners move as the pixels do: quarter turns (x, y) -> (y, S - x), then the flip x -> S - x
        gen = torch.Generator().manual_seed(seed)
        k, flip = int(torch.randint(4, (1,), generator=gen)), bool(torch.randint(2, (1,), generator=gen))
        pts = corners(box)[0]
        for _ in range(k):
            pts = torch.stack([pts[:, 1], size - pts[:, 0]], 1)
        if flip:
            pts = torch.stack([size - pts[:, 0], pts[:, 1]], 1)
        torch.testing.assert_close(_point_set(corners(b)[0]), _point_set(pts), atol=1e-3, rtol=0)
        assert 0 <= float(b[0, 4]) < math.pi / 2
        seen.add((k, flip))
    assert len(seen) == 8  # every rotation / flip combination was checked


def _batch(n=2, size=64, seed=0):
    data = generate(n, size, seed=seed)
    return data, collate(data, list(range(n)), None)


@pytest.mark.parametrize("box,angle", [("probiou", "dfl"), ("smooth_l1", "dfl"), ("probiou", "direct")])
def test_every_loss_variant_gives_finite_gradients(box, angle):
    torch.manual_seed(0)
    model = PPYOLOER("s", num_classes=5, angle=angle)
    _, (images, gl, gb, gm) = _batch()
    losses = detection_loss(model.head, model(images), gl, gb, gm, box=box)
    losses["loss"].backward()
    assert torch.isfinite(losses["loss"]) and float(losses["loss_box"]) > 0
    assert (float(losses["loss_dfl"]) > 0) == (angle == "dfl")
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_unknown_box_loss_is_refused():
    model = PPYOLOER("s", num_classes=5)
    _, (images, gl, gb, gm) = _batch(1)
    with pytest.raises(ValueError, match="'probiou' or 'smooth_l1'"):
        detection_loss(model.head, model(images), gl, gb, gm, box="giou")


def test_rotated_nms_drops_overlaps_and_keeps_the_rest():
    boxes = torch.tensor([[10.0, 10, 8, 4, 0.2], [10.2, 10, 8, 4, 0.25], [40, 40, 8, 4, 0.0], [10, 10, 8, 4, 1.4]])
    keep = nms_rotated(boxes, torch.tensor([0.9, 0.8, 0.7, 0.6]), iou=0.1)
    # box 1 nearly equals box 0; box 3 crosses box 0 at ~70 degrees (IoU > 0.1): both dropped
    assert keep.tolist() == [0, 2]


def test_same_seed_same_numbers():
    data = generate(8, 64, seed=0)
    runs = []
    for _ in range(2):
        torch.manual_seed(5)
        model = PPYOLOER("s", num_classes=5)
        runs.append(fit(model, data, steps=2, batch_size=4, lr=1e-3, weight_decay=0.0, warmup=1, box="probiou",
                        seed=5)["final_losses"])
    assert runs[0] == runs[1]


@pytest.mark.slow
def test_model_learns_a_planted_signal():
    """Fitting 8 images for 40 steps must beat the untrained model on those images by a wide margin."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    data = generate(8, 64, seed=0, objects=(1, 2), scale=(0.3, 0.45))
    model = PPYOLOER("s", num_classes=5)
    before = map_on(model, data, pre_nms=100)["map"]
    fit(model, data, steps=40, batch_size=8, lr=2e-3, weight_decay=0.0, warmup=5, box="probiou", seed=0)
    after = map_on(model, data, pre_nms=100)["map"]
    assert after > before + 20, (before, after)
