"""``python -m replications.ta_moe.charbench``: what TA-MoE's Tiny Shakespeare protocol (dataset=tinyshakespeare) costs.

For each arm (default: the TA loss and the GShard loss): parameters (all, and active per token: every non-expert
parameter, k of the E experts and one of the W rank-local routers per MoE layer) and seconds per optimiser step over
`--steps` steps of the protocol's own loop, one thread; then the protocol's estimate (steps x seeds). Two clocks:
the wall clock (this machine now, shared or not) and this process's CPU time (for one thread, what a step takes on
an idle core); the estimate uses the CPU time. The numbers are the model config header's cost; nothing here is a
result, and the output goes under outputs/.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import torch

from replications.ta_moe import REPLICATION
from shared.atomic import write_json_atomic
from shared.paths import REPO_ROOT
from shared.runinfo import environment
from shared.runner import make_run, pin_threads
from shared.seeding import seed_everything

DATASET = "tinyshakespeare"
ARMS = [f"ta_moe/{DATASET}", "ta_moe_gshard"]


def compose(model: str, *overrides: str):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        return hydra_compose("config", overrides=["paper=ta_moe", f"dataset={DATASET}", f"model={model}",
                                                  "tracker=none", *overrides])


def active_parameters(model: torch.nn.Module, k: int) -> tuple[int, int]:
    """(all parameters, those one token uses): per MoE layer k of its E stacked experts and one router (the emulated
    ranks' local routers are W copies of one shape; a token is routed by its own rank's)."""
    total = sum(p.numel() for p in model.parameters())
    active = total
    for layer in model.moe_layers():
        experts = sum(p.numel() for p in layer.parameters(recurse=False))
        active -= experts - experts * k // layer.gate.num_experts
        active -= sum(p.numel() for p in layer.gate.parameters()) - sum(p.numel() for p in layer.gate.proj.parameters())
    return total, active


def measure(choice: str, data: Any, steps: int) -> dict[str, Any]:
    cfg = compose(choice, f"scale.max_epochs={steps}", "paper.protocol.curve_points=1",
                  "paper.protocol.curve_valid_tokens=64")  # one curve point, almost free
    pin_threads(cfg)
    run = make_run(cfg)
    seed_everything(1)
    model = REPLICATION.build_model(run, data)
    total, active = active_parameters(model, int(cfg.model.gate_options.get("k", 2)))
    t0, c0 = time.perf_counter(), time.process_time()
    summary = REPLICATION.train(run, model, data, 1, lambda m, s: None)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    per_step = cpu / summary["steps"]
    p = cfg.paper.protocol
    return {"model": str(cfg.model.name), "config": choice, "parameters": total, "active_parameters": active,
            "cpu_seconds_per_step": per_step, "wall_seconds_per_step": wall / summary["steps"],
            "steps_timed": summary["steps"], "protocol_minutes_per_seed": per_step * p.steps / 60,
            "protocol_minutes": per_step * p.steps * len(p.seeds) / 60}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30, help="optimiser steps timed per arm")
    ap.add_argument("--models", nargs="*", default=ARMS, help=f"config choices (default: {' '.join(ARMS)})")
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "outputs" / "ta_moe_charbench.json")
    args = ap.parse_args(argv)
    data = REPLICATION.load_data(make_run(compose(args.models[0])))
    load_before = os.getloadavg()
    rows = []
    for choice in args.models:
        row = measure(choice, data, args.steps)
        rows.append(row)
        print(f"{row['model']:>8}: {row['parameters']:>9,} params ({row['active_parameters']:,} active), "
              f"{row['cpu_seconds_per_step'] * 1000:.0f} ms/step CPU ({row['wall_seconds_per_step'] * 1000:.0f} wall)"
              f" -> {row['protocol_minutes_per_seed']:.1f} min per seed, {row['protocol_minutes']:.1f} for 3 seeds")
    total = sum(r["protocol_minutes"] for r in rows)
    print(f"the arms' protocol: {total:.0f} min estimated on an idle core (CPU time); load {os.getloadavg()}")
    write_json_atomic(args.out, {"dataset": DATASET, "arms": rows, "protocol_minutes": total,
                                 "load_average": [load_before, os.getloadavg()], "environment": environment()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
