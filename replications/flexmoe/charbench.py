"""``python -m replications.flexmoe.charbench``: what FlexMoE's trace runs cost on the character-level protocol
(dataset=tinyshakespeare), to size conf/paper/flexmoe.yaml's Tiny Shakespeare plan.

Per arm (config choice): parameters (all, and active per token: every non-expert parameter plus k experts' share of
each MoE layer), seconds per optimiser step over `--steps` steps with the trace recorder on, and the protocol's
estimate (steps x seeds). One thread, the protocol's. Two clocks: the wall clock (this machine now, shared or not)
and this process's CPU time, which for a single-threaded run is a step on an idle core; the estimate uses the CPU
time. The numbers go to the config header as a cost estimate; nothing here is a result.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import torch

from replications.flexmoe import REPLICATION
from replications.flexmoe.train import fit
from shared.atomic import write_json_atomic
from shared.paths import REPO_ROOT
from shared.runinfo import environment
from shared.runner import make_run, pin_threads
from shared.seeding import seed_everything

DATASET = "tinyshakespeare"
ARMS = ["flexmoe/tinyshakespeare", "flexmoe_switch_e16", "flexmoe_gshard_e8", "flexmoe_gshard_e16"]


def compose(model: str, *overrides: str):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        return hydra_compose("config", overrides=["paper=flexmoe", f"dataset={DATASET}", f"model={model}",
                                                  "tracker=none", *overrides])


def active_parameters(model: torch.nn.Module, cfg) -> tuple[int, int]:
    """(all parameters, those one token uses: non-expert parameters plus k of E experts per MoE layer)."""
    total = sum(p.numel() for p in model.parameters())
    k = 2 if cfg.model.gate == "gshard" else 1
    expert = sum(p.numel() for layer in model.moe_layers() for p in layer.parameters(recurse=False))
    return total, total - expert + expert * k // int(cfg.model.num_experts)


def measure(choice: str, data, steps: int) -> dict[str, Any]:
    # curve points after every step on 64 characters: almost free, and each one ends a step's timing cleanly
    cfg = compose(choice, f"scale.max_epochs={steps}", f"paper.protocol.curve_points={steps}",
                  "paper.protocol.curve_valid_tokens=64")
    pin_threads(cfg)
    seed_everything(1)
    model = REPLICATION.build_model(make_run(cfg), data)
    total, active = active_parameters(model, cfg)
    t0, c0 = time.perf_counter(), time.process_time()
    summary, _, _ = fit(cfg, model, data.train, data.valid, lambda m, s: None, 1)
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
    ap.add_argument("--models", nargs="*", default=ARMS, help="config choices (default: the four WikiText-2 arms)")
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "outputs" / "flexmoe_charbench.json")
    args = ap.parse_args(argv)
    data = REPLICATION.load_data(make_run(compose(args.models[0])))
    load_before = os.getloadavg()
    rows = []
    for choice in args.models:
        row = measure(choice, data, args.steps)
        rows.append(row)
        print(f"{row['model']:>10}: {row['parameters']:>9,} params ({row['active_parameters']:,} active), "
              f"{row['cpu_seconds_per_step'] * 1000:.0f} ms/step CPU ({row['wall_seconds_per_step'] * 1000:.0f} wall) "
              f"-> {row['protocol_minutes']:.1f} min for 3 seeds", flush=True)
    write_json_atomic(args.out, {"dataset": DATASET, "arms": rows, "load_average_before": load_before,
                                 "load_average_after": os.getloadavg(), "environment": environment()})
    print(f"load average {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
