"""PP-YOLOE-R's paper-specific part of its claim specs (paper.yaml ``claims:``, judged by shared.claims as paired
differences of test mAP by seed): the scale each verdict was reached at, beside the claim's (DOTA-v1.0, the paper's
model sizes)."""

from __future__ import annotations

import functools
from typing import Any

import torch

from replications.ppyoloe_r.model import PPYOLOER, reparameterize, trainable_parameters
from replications.ppyoloe_r.synthetic import CLASS_NAMES
from shared.claims import ClaimSpec
from shared.report.paper_hook import PaperResults


@functools.lru_cache(maxsize=8)
def deploy_parameters(size: str, angle: str, num_classes: int = len(CLASS_NAMES)) -> int:
    """Trainable parameters after re-parameterisation (as the README counts them), on the meta device."""
    with torch.device("meta"):
        model = reparameterize(PPYOLOER(size, num_classes=num_classes, angle=angle).eval())
    return trainable_parameters(model)


def scale(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, Any]:
    """{params, steps, dataset, hardware, text} of the paper's setting's record (else the alternative's)."""
    record = next((r for arm in reversed(spec.arms) if (r := results.record(dataset, arm)) is not None), None)
    if record is None:
        return {"dataset": dataset}
    d, m = record["config"]["dataset"], record["config"]["model"]
    params = deploy_parameters(m["size"], m.get("angle", "dfl"))
    hw = record.get("environment", {}).get("hardware", {})
    hardware = hw.get("gpu") or hw.get("cpu") or "unknown"
    text = (f"{m['size']} model from scratch, {m['steps']} steps of batch {m['batch_size']}, procedural "
            f"{d['image_size']}-px images ({params / 1e6:.2f}M params, {len(CLASS_NAMES)} classes; {hardware})")
    return {"params": params, "steps": m["steps"], "dataset": dataset, "hardware": hardware, "text": text}
