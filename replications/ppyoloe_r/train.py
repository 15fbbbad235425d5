"""Training from scratch and inference (decode, score threshold, rotated NMS) for PP-YOLOE-R.

Official schedule (`_base_/optimizer_3x.yml`): momentum SGD with cosine decay, linear warm-up, weight decay
5e-4, gradient clipping at norm 35, EMA 0.9998, ImageNet-pretrained backbone. Here, from scratch on a CPU for
a few hundred steps: AdamW (our choice: momentum SGD at the official lr barely moves a randomly initialised
network in that budget), the same cosine + warm-up shape, clipping and weight decay, no EMA (0.9998 averages
over ~5,000 steps, longer than the run). Augmentation: the right-angle part of the official RandomRotate
(0/90/180/270 degrees) and horizontal flips.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from replications.ppyoloe_r.boxes import corners, fold_angle, rotated_iou
from replications.ppyoloe_r.dota_eval import Objects, evaluate
from replications.ppyoloe_r.loss import detection_loss
from replications.ppyoloe_r.model import PPYOLOER
from replications.ppyoloe_r.synthetic import RotatedSet
from shared.progress import bar

WEIGHTS_DIR = Path("outputs") / "ppyoloe_r" / "weights"  # trained weights stay out of git


def weights_path(dataset: str, scale: str, seed: int) -> Path:
    """Where train() keeps the learning-curve run's weights (for the DOTA example figure of the page)."""
    return WEIGHTS_DIR / f"{dataset}_{scale}_seed{seed}.pt"


MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1) * 255
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1) * 255


def normalise(images: torch.Tensor) -> torch.Tensor:
    return (images.float() - MEAN) / STD


def augment(image: torch.Tensor, boxes: torch.Tensor, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Random quarter turn and horizontal flip of one square image [3, S, S] and its boxes."""
    size = image.shape[-1]
    b = boxes.clone()
    k = int(torch.randint(4, (1,), generator=gen))
    for _ in range(k):  # rot90 counter-clockwise on screen: (x, y) -> (y, S - x), theta -> theta - pi/2
        image = torch.rot90(image, 1, (1, 2))
        b = torch.stack([b[:, 1], size - b[:, 0], b[:, 2], b[:, 3], b[:, 4] - math.pi / 2], 1)
    if bool(torch.randint(2, (1,), generator=gen)):
        image = image.flip(-1)
        b = torch.stack([size - b[:, 0], b[:, 1], b[:, 2], b[:, 3], -b[:, 4]], 1)
    return image, fold_angle(b)


def collate(data, idx: list[int], gen: torch.Generator | None) -> tuple[torch.Tensor, ...]:
    """A padded batch from any dataset with .item(i) -> (uint8 image [3, S, S], boxes [n, 5], labels [n])."""
    imgs, boxes, labels = [], [], []
    for i in idx:
        img, b, lab = data.item(i)
        if gen is not None:
            img, b = augment(img, b, gen)
        imgs.append(img)
        boxes.append(b)
        labels.append(lab)
    n = max(1, max(len(b) for b in boxes))
    gt_boxes = torch.zeros(len(idx), n, 5)
    gt_labels = torch.zeros(len(idx), n, dtype=torch.long)
    gt_mask = torch.zeros(len(idx), n)
    for j, (b, lab) in enumerate(zip(boxes, labels)):
        gt_boxes[j, :len(b)] = b
        gt_labels[j, :len(b)] = lab
        gt_mask[j, :len(b)] = 1
    return normalise(torch.stack(imgs)), gt_labels, gt_boxes, gt_mask


def lr_at(step: int, total: int, base: float, warmup: int) -> float:
    if step < warmup:
        return base * (step + 1) / warmup
    return base * 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))


def fit(model: PPYOLOER, data, steps: int, batch_size: int, lr: float, weight_decay: float,
        warmup: int, box: str, seed: int, clip: float = 35.0, eval_every: int = 0,
        evaluate_fn: Callable[[PPYOLOER], float] | None = None,
        log: Callable[[dict[str, float], int], None] | None = None) -> dict:
    gen = torch.Generator().manual_seed(seed)
    device = next(model.parameters()).device
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    curve, t0 = [], time.perf_counter()
    order: list[int] = []
    last: dict[str, float] = {}
    for step in bar(range(steps), desc="train"):
        model.train()
        if len(order) < batch_size:
            order += torch.randperm(len(data), generator=gen).tolist()
        idx, order = order[:batch_size], order[batch_size:]
        images, gl, gb, gm = (t.to(device) for t in collate(data, idx, gen))
        for g in opt.param_groups:
            g["lr"] = lr_at(step, steps, lr, warmup)
        losses = detection_loss(model.head, model(images), gl, gb, gm, box=box)
        opt.zero_grad(set_to_none=True)
        losses["loss"].backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        last = {k: float(v.detach()) for k, v in losses.items()}
        if log is not None and (step % 20 == 0 or step == steps - 1):
            log({f"train/{k}": v for k, v in last.items()}, step)
        if evaluate_fn is not None and eval_every and ((step + 1) % eval_every == 0 or step == steps - 1):
            m = evaluate_fn(model)
            curve.append({"step": step + 1, "seconds": round(time.perf_counter() - t0, 1), "map": m, **last})
            if log is not None:
                log({"val/map": m}, step + 1)
    return {"steps": steps, "train_seconds": round(time.perf_counter() - t0, 1), "final_losses": last, "curve": curve}


def nms_rotated(boxes: torch.Tensor, scores: torch.Tensor, iou: float) -> torch.Tensor:
    """Greedy NMS with exact rotated IoU; indices kept, best first."""
    order = scores.argsort(descending=True)
    boxes = boxes[order]
    ious = rotated_iou(boxes.unsqueeze(1), boxes.unsqueeze(0))
    keep = torch.ones(len(order), dtype=torch.bool)
    for i in range(len(order)):
        if keep[i]:
            keep[i + 1:] &= ious[i, i + 1:] <= iou
    return order[keep]


@torch.no_grad()
def predict(model: PPYOLOER, images: torch.Tensor, score_threshold: float = 0.05, nms_iou: float = 0.1,
            pre_nms: int = 2000, batch_size: int = 16) -> list[list[tuple[int, float, np.ndarray]]]:
    """Per image: (class, score, polygon [8]) after per-class rotated NMS (official MultiClassNMS settings:
    nms_top_k 2000 per class, score 0.05, IoU 0.1, keep all; a small image passes a smaller pre_nms)."""
    model.eval()
    device = next(model.parameters()).device
    out = []
    for start in range(0, len(images), batch_size):
        raw = model(normalise(images[start:start + batch_size]).to(device))
        boxes = model.head.decode(raw).cpu()
        scores = torch.sigmoid(raw["cls_logits"]).cpu()
        for b, s in zip(boxes, scores):
            dets = []
            for c in range(s.shape[1]):
                keep = (s[:, c] > score_threshold).nonzero().squeeze(1)
                if len(keep) == 0:
                    continue
                keep = keep[s[keep, c].argsort(descending=True)[:pre_nms]]
                kept = keep[nms_rotated(b[keep], s[keep, c], nms_iou)]
                polys = corners(b[kept]).reshape(-1, 8).numpy()
                dets += [(c, float(s[k, c]), p) for k, p in zip(kept.tolist(), polys)]
            out.append(dets)
    return out


def map_on(model: PPYOLOER, data: RotatedSet, **kw) -> dict[str, float]:
    """DOTA Task-1 mAP (percent) of the model on a RotatedSet."""
    gt, dets = {}, {c: [] for c in data.classes}
    for i, per_image in enumerate(predict(model, data.images, **kw)):
        gt[str(i)] = Objects(corners(data.boxes[i]).reshape(-1, 8).numpy(),
                             [data.classes[k] for k in data.labels[i].tolist()])
        for c, score, poly in per_image:
            dets[data.classes[c]].append((str(i), score, poly))
    return evaluate(gt, dets, data.classes)
