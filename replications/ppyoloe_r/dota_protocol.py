"""The DOTA test path on large images: split (1024, gap 200), detect per patch, merge (polygon NMS 0.1),
then the Task-1 evaluator; what the official `generate_result.py` + devkit evaluation do."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from PIL import Image

from replications.ppyoloe_r.dota_eval import DOTA_V1_CLASSES, Objects, evaluate
from replications.ppyoloe_r.dota_split import merge, split
from replications.ppyoloe_r.model import PPYOLOER
from replications.ppyoloe_r.train import predict
from shared.progress import bar


def detect_large(model: PPYOLOER, images: dict[str, Path], classes: tuple[str, ...] = DOTA_V1_CLASSES,
                 size: int = 1024, gap: int = 200, **predict_kw) -> dict[str, list[tuple[str, float, np.ndarray]]]:
    """Merged detections per class on whole images: {class: [(image, score, polygon)]}."""
    per_patch: dict[str, list] = {c: [] for c in classes}
    for stem, path in bar(images.items(), desc="detect", total=len(images)):
        with Image.open(path) as im:
            arr = np.asarray(im.convert("RGB"))
        empty = Objects(np.zeros((0, 8)), [])
        for p in split(stem, empty, arr.shape[1], arr.shape[0], arr, size=size, gap=gap):
            img = torch.from_numpy(p.image.copy()).permute(2, 0, 1).unsqueeze(0)
            for c, score, poly in predict(model, img, **predict_kw)[0]:
                per_patch[classes[c]].append((p.name, score, poly))
    return merge(per_patch)


def evaluate_large(model: PPYOLOER, images: dict[str, Path], labels: dict[str, Objects],
                   classes: tuple[str, ...] = DOTA_V1_CLASSES, size: int = 1024, gap: int = 200) -> dict[str, float]:
    return evaluate(labels, detect_large(model, images, classes, size, gap), classes)
