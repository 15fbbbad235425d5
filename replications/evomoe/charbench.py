"""``python -m replications.evomoe.charbench``: what the character-level protocol (dataset=tinyshakespeare) costs.

For every arm of conf/paper/evomoe.yaml's plan: parameters (all, and active per token: one expert of the top-1
arms, two half-width experts of GShard's), seconds per optimiser step over `--steps` steps (every EvoMoE phase
included: its schedule is fractions of the steps), and the protocol's estimated time (steps x seeds); plus the
character bigram floor (ngram.py: Kneser-Ney counts of the train part) as a validation loss. One thread, the
protocol's. Two clocks: the wall clock (what a step takes on this machine now, shared or not) and this process's
CPU time, which for a single-threaded run is what a step takes on an idle core; the estimate uses the CPU time.
The numbers are the config header's cost estimate; nothing here is a result.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf

from replications.evomoe import REPLICATION
from replications.evomoe.ngram import kneser_ney_bigram_ppl
from shared.atomic import write_json_atomic
from shared.paths import REPO_ROOT
from shared.runinfo import environment
from shared.runner import make_run, pin_threads
from shared.seeding import seed_everything

DATASET = "tinyshakespeare"


def compose(model: str, *overrides: str):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        return hydra_compose("config", overrides=["paper=evomoe", f"dataset={DATASET}", f"model={model}",
                                                  "tracker=none", *overrides])


def active_parameters(model: torch.nn.Module, cfg) -> tuple[int, int]:
    """(all parameters, those one token uses: every non-expert parameter plus k experts' share per MoE layer)."""
    total = sum(p.numel() for p in model.parameters())
    k = 2 if cfg.model.gate == "gshard" else 1
    expert = sum(p.numel() for layer in model.moe_layers() for p in layer.parameters(recurse=False))
    E = cfg.model.get("num_experts", 1)
    return total, total - expert + (expert * k // E if model.moe_layers() else 0)


def bigram_floor(data) -> float:
    """The Kneser-Ney character bigram's validation loss (nats/char), fitted on the whole train part."""
    return math.log(kneser_ney_bigram_ppl(data.train, data.valid, len(data.vocab)))


def measure(model_choice: str, data, steps: int) -> dict[str, Any]:
    cfg = compose(model_choice, f"scale.max_epochs={steps}", f"paper.protocol.curve_points={steps}",
                  "paper.protocol.curve_valid_tokens=64")  # curve points after every step, almost free
    pin_threads(cfg)
    run = make_run(cfg)
    seed_everything(1)
    model = REPLICATION.build_model(run, data)
    total, active = active_parameters(model, cfg)
    t0, c0 = time.perf_counter(), time.process_time()
    summary = REPLICATION.train(run, model, data, 1, lambda m, s: None)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    per_step = cpu / summary["steps"]  # includes the 64-character curve points: a few ms
    p = cfg.paper.protocol
    return {"model": str(cfg.model.name), "config": model_choice, "parameters": total, "active_parameters": active,
            "cpu_seconds_per_step": per_step, "wall_seconds_per_step": summary["train_seconds"] / summary["steps"],
            "wall_seconds": wall, "cpu_seconds": cpu, "steps_timed": summary["steps"],
            "mean_active_experts": summary["mean_active_experts"],
            "protocol_minutes_per_seed": per_step * p.steps / 60,
            "protocol_minutes": per_step * p.steps * len(p.seeds) / 60}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=40, help="optimiser steps timed per arm")
    ap.add_argument("--models", nargs="*", help="config choices (default: the paper's replicate plan)")
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "outputs" / "evomoe_charbench.json")
    args = ap.parse_args(argv)
    plan = OmegaConf.load(REPO_ROOT / "conf" / "paper" / "evomoe.yaml").replicate.models
    choices = args.models or [f"evomoe/{DATASET}" if m == "evomoe" else m for m in plan]
    data = REPLICATION.load_data(make_run(compose(choices[0])))
    floor = bigram_floor(data)
    print(f"bigram floor (Kneser-Ney, full train part): validation loss {floor:.4f} nats/char")
    rows = []
    for choice in choices:
        row = measure(choice, data, args.steps)
        rows.append(row)
        print(f"{row['model']:>8}: {row['parameters']:>8,} params ({row['active_parameters']:,} active), "
              f"{row['cpu_seconds_per_step'] * 1000:.0f} ms/step CPU ({row['wall_seconds_per_step'] * 1000:.0f} wall) "
              f"-> {row['protocol_minutes']:.1f} min for the protocol")
    total = sum(r["protocol_minutes"] for r in rows)
    print(f"whole protocol ({len(rows)} arms x seeds): {total:.0f} min estimated on an idle core (CPU time)")
    write_json_atomic(args.out, {"dataset": DATASET, "bigram_valid_loss": floor, "arms": rows, "protocol_minutes": total,
                                 "load_average": os.getloadavg(), "environment": environment()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
