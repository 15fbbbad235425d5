"""``python -m replications.ppyoloe_r.architecture [out_dir] [--sizes s,m,l,x]``: params and FLOPs of our
PP-YOLOE-R s/m/l/x against the official README, written to <out_dir>/architecture.json.

out_dir defaults to outputs/results/ppyoloe_r (a run by hand); the committed file is results/ppyoloe_r/
architecture.json (`python -m replications.ppyoloe_r.architecture results/ppyoloe_r`), which the paper's page
reads (replications/ppyoloe_r/report.py) and tests/test_ppyoloe_r_model.py checks against these counts.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

from replications.ppyoloe_r.model import PPYOLOER, SIZES, reparameterize, trainable_parameters
from shared.atomic import write_json_atomic
from shared.paths import HAND_RUNS
from shared.reference import load_paper
from shared.runinfo import environment

PAPER = Path(__file__).with_name("paper.yaml")
FILE_NAME = "architecture.json"
IMAGE = 1024


def count(size: str, image: int = IMAGE) -> dict[str, float]:
    """Params (training and deploy form) and FLOPs of the deploy form at image x image, on the meta device
    (shapes only: no memory, no arithmetic). FLOPs by torch.utils.flop_counter: 2 x multiply-adds of
    convolutions and matrix products; batch norm, activations, pooling, upsampling and adds are not counted."""
    with torch.device("meta"):
        model = PPYOLOER(size).eval()
        train_params = trainable_parameters(model)
        reparameterize(model)
        counter = FlopCounterMode(display=False)
        with counter, torch.no_grad():
            model(torch.zeros(1, 3, image, image))
    return {"params_train_m": train_params / 1e6, "params_m": trainable_parameters(model) / 1e6,
            "flops_g": counter.get_total_flops() / 1e9}


def readme_value(paper: dict, model: str, metric: str, kind: str = "authors_release") -> float | None:
    for e in paper["reported"]:
        if (e["dataset"], e["model"], e["metric"], e["kind"]) == ("architecture", model, metric, kind):
            return e["value"]
    return None


def rows(sizes: tuple[str, ...] = tuple(SIZES)) -> list[dict[str, Any]]:
    """One row per size: our counts (4 decimals) beside the README's and the official code's."""
    paper = load_paper(PAPER)
    out = []
    for s in sizes:
        c = count(s)
        name = f"ppyoloe_r_{s}"
        p_ref, f_ref = readme_value(paper, name, "params_m"), readme_value(paper, name, "flops_g")
        out.append({"model": name, **{k: round(v, 4) for k, v in c.items()}, "readme_params_m": p_ref,
                    "readme_flops_g": f_ref, "paddle_flops_g": readme_value(paper, name, "flops_g", "authors_code_run"),
                    "params_equal": p_ref is not None and round(c["params_m"], 2) == p_ref,
                    "flops_rel_diff": None if f_ref is None else round(c["flops_g"] / f_ref - 1, 5)})
    return out


def record(sizes: tuple[str, ...] = tuple(SIZES)) -> dict[str, Any]:
    t0 = time.perf_counter()
    counted = rows(sizes)
    return {"rows": counted, "image": IMAGE, "counter": "torch.utils.flop_counter.FlopCounterMode on the meta device",
            "seconds": round(time.perf_counter() - t0, 1), "environment": environment()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m replications.ppyoloe_r.architecture", description=__doc__)
    parser.add_argument("out_dir", nargs="?", type=Path, default=HAND_RUNS / "ppyoloe_r")
    parser.add_argument("--sizes", default=",".join(SIZES), help="comma-separated, from " + ",".join(SIZES))
    args = parser.parse_args(argv)
    sizes = tuple(s for s in args.sizes.split(",") if s)
    if not sizes or set(sizes) - set(SIZES):
        parser.error(f"--sizes must name some of {', '.join(SIZES)}, got '{args.sizes}'")
    path = args.out_dir / FILE_NAME
    write_json_atomic(path, record(sizes))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
