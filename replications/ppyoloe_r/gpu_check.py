"""``python -m replications.ppyoloe_r.gpu_check``: a two-minute check before the DOTA recipe on a GPU.

Builds PP-YOLOE-R-s and -l, records their deploy-form parameters and FLOPs against the README, times training
steps at the official input (batch 2 per GPU of 1024 x 1024 patches, random boxes) and inference after
re-parameterisation, and extrapolates the 36-epoch DOTA-v1.0 trainval run (~19,000 patches at gap 200).
Prints one line per model and writes <out-dir>/check_<device>.json (make gpu-check, conf/gpu_check.yaml). Then,
with DOTA under the mirror:
    make replicate-ppyoloe_r dataset=dota_v1 model=ppyoloe_r device=cuda
``--device cpu --size tiny`` runs the same code on a CPU in seconds (a check of the script, not a measurement).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

import torch

from replications.ppyoloe_r.architecture import count
from replications.ppyoloe_r.loss import detection_loss
from replications.ppyoloe_r.model import PPYOLOER, reparameterize
from shared.atomic import write_json_atomic
from shared.paths import HAND_RUNS
from shared.runinfo import environment

PATCHES, EPOCHS = 19000, 36  # DOTA-v1.0 trainval at 1024 / gap 200, approximately; the official 3x schedule
SIZES: dict[str, dict[str, Any]] = {
    "h200": {"models": ["s", "l"], "image": 1024, "batch": 2, "boxes": 20, "steps": 6, "warmup": 2, "infer": 10},
    "tiny": {"models": ["s"], "image": 64, "batch": 1, "boxes": 4, "steps": 1, "warmup": 1, "infer": 1},
}


def sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


def time_model(size: str, p: dict[str, Any], dev: torch.device) -> dict[str, Any]:
    """Training-step and re-parameterised inference times of one model size at the setting's input."""
    model = PPYOLOER(size).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator(device="cpu").manual_seed(0)
    n, b, side = p["batch"], p["boxes"], p["image"]
    images = torch.randn(n, 3, side, side, generator=g).to(dev)
    boxes = torch.cat([torch.rand(n, b, 2, generator=g) * side, torch.rand(n, b, 2, generator=g) * side / 12.8 + 8,
                       torch.rand(n, b, 1, generator=g) * math.pi / 2], -1).to(dev)
    labels, mask = torch.randint(0, 15, (n, b), generator=g).to(dev), torch.ones(n, b, device=dev)
    times = []
    for step in range(p["steps"] + p["warmup"]):
        sync(dev)
        t0 = time.perf_counter()
        loss = detection_loss(model.head, model(images), labels, boxes, mask)["loss"]
        opt.zero_grad()
        loss.backward()
        opt.step()
        sync(dev)
        if step >= p["warmup"]:  # the first steps pay for allocation and kernel selection
            times.append(time.perf_counter() - t0)
    step_s = sum(times) / len(times)
    model.eval()
    reparameterize(model)
    with torch.no_grad():
        model(images[:1])
        sync(dev)
        t0 = time.perf_counter()
        for _ in range(p["infer"]):
            model(images[:1])
        sync(dev)
    c = count(size)
    return {"model": f"ppyoloe_r_{size}", "params_m": c["params_m"], "flops_g": c["flops_g"], "train_step_s": step_s,
            "infer_ms": (time.perf_counter() - t0) / p["infer"] * 1000, "loss": float(loss.detach()),
            "dota_36_epochs_hours": step_s * PATCHES / p["batch"] * EPOCHS / 3600}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda (the measurement) or cpu (a check of the script)")
    parser.add_argument("--size", default="h200", choices=sorted(SIZES), help="h200: the official input; tiny: CPU check")
    parser.add_argument("--out-dir", type=Path, default=HAND_RUNS / "ppyoloe_r" / "gpu")
    args = parser.parse_args(argv)
    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda but torch sees no GPU (a CPU check of the script: --device cpu --size tiny)",
              file=sys.stderr)
        return 2
    p = SIZES[args.size]
    t0 = time.perf_counter()
    rows = []
    for size in p["models"]:
        r = time_model(size, p, dev)
        rows.append(r)
        print(f"{size}: params {r['params_m']:.2f} M, FLOPs {r['flops_g']:.2f} G; train step (batch {p['batch']} at "
              f"{p['image']}) {r['train_step_s']:.3f} s -> 36 epochs ~{r['dota_36_epochs_hours']:.1f} h on one device; "
              f"fp32 inference {r['infer_ms']:.1f} ms per patch; loss {r['loss']:.3f}", flush=True)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    slug = "".join(ch if ch.isalnum() else "_" for ch in name.lower()).strip("_")
    path = args.out_dir / f"check_{slug}.json"
    write_json_atomic(path, {"what": "PP-YOLOE-R training-step and inference timing, DOTA-v1.0 recipe cost",
                             "device": name, "size": args.size, "params": p, "models": rows,
                             "wall_seconds": round(time.perf_counter() - t0, 1), "environment": environment()})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
