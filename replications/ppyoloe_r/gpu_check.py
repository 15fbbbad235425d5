"""``python -m replications.ppyoloe_r.gpu_check``: a two-minute check before the DOTA recipe on a GPU.

Builds PP-YOLOE-R-s and -l, prints their deploy-form parameters and FLOPs against the README, times training
steps at the official input (batch 2 per GPU of 1024 x 1024 patches, random boxes) and inference after
re-parameterisation, and extrapolates the 36-epoch DOTA-v1.0 trainval run (~19,000 patches at gap 200).
Writes nothing; prints one line per check. Then, with DOTA under the mirror:
    make replicate-ppyoloe_r dataset=dota_v1 model=ppyoloe_r device=cuda
"""

from __future__ import annotations

import math
import sys
import time

import torch

from replications.ppyoloe_r.architecture import count
from replications.ppyoloe_r.loss import detection_loss
from replications.ppyoloe_r.model import PPYOLOER, reparameterize

PATCHES, EPOCHS = 19000, 36  # DOTA-v1.0 trainval at 1024 / gap 200, approximately; the official 3x schedule


def main() -> int:
    if not torch.cuda.is_available():
        print("no CUDA device: this check is for the GPU recipe")
        return 2
    dev = torch.device("cuda")
    for size in ("s", "l"):
        c = count(size)
        model = PPYOLOER(size).to(dev)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        g = torch.Generator(device="cpu").manual_seed(0)
        images = torch.randn(2, 3, 1024, 1024, generator=g).to(dev)
        boxes = torch.cat([torch.rand(2, 20, 2, generator=g) * 1024, torch.rand(2, 20, 2, generator=g) * 80 + 8,
                           torch.rand(2, 20, 1, generator=g) * math.pi / 2], -1).to(dev)
        labels, mask = torch.randint(0, 15, (2, 20), generator=g).to(dev), torch.ones(2, 20, device=dev)
        times = []
        for step in range(6):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            loss = detection_loss(model.head, model(images), labels, boxes, mask)["loss"]
            opt.zero_grad()
            loss.backward()
            opt.step()
            torch.cuda.synchronize()
            if step >= 2:
                times.append(time.perf_counter() - t0)
        step_s = sum(times) / len(times)
        model.eval()
        reparameterize(model)
        with torch.no_grad():
            for _ in range(3):
                model(images[:1])
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(10):
                model(images[:1])
            torch.cuda.synchronize()
        infer_ms = (time.perf_counter() - t0) / 10 * 1000
        hours = step_s * PATCHES / 2 * EPOCHS / 3600
        print(f"{size}: params {c['params_m']:.2f} M, FLOPs {c['flops_g']:.2f} G; train step (batch 2) {step_s:.3f} s "
              f"-> 36 epochs ~{hours:.1f} h on one GPU; fp32 inference {infer_ms:.1f} ms per 1024 patch; "
              f"loss {float(loss):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
