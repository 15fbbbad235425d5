"""``python -m replications.moe.ladder_cost``: what each rung of the Tiny Shakespeare scale ladder costs, before it runs.

For every MoE paper with a ladder (its ``replicate.models_for`` names the rungs' arms), every rung (the protocol at
another model size, conf/dataset/tinyshakespeare_<layers>x<d>.yaml) and every arm: parameters (all and active per
token), and seconds per optimiser step over ``--steps`` steps, on two clocks: this process's CPU time (one thread, so
what a step takes on an idle core; the estimate uses it) and the wall clock (what it takes on this machine now).
Estimated minutes = CPU seconds per step x the protocol's steps x seeds, plus 5% for evaluation (20 curve points of
15,360 characters and the final 111,540: measured at 4 x d128, where the records' wall time exceeds steps x s/step
by 3-6%). Writes outputs/ladder_cost.json; nothing here is a result.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

import replications
from shared.atomic import write_json_atomic
from shared.paths import REPO_ROOT
from shared.runinfo import environment
from shared.runner import make_run, pin_threads
from shared.seeding import seed_everything

PAPERS = ("evomoe", "ta_moe", "flexmoe")
RUNGS = ("tinyshakespeare_2x64", "tinyshakespeare", "tinyshakespeare_6x192")
EVAL_OVERHEAD = 1.05


def compose(paper: str, dataset: str, model: str, *overrides: str):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        return hydra_compose("config", overrides=[f"paper={paper}", f"dataset={dataset}", f"model={model}",
                                                  "tracker=none", *overrides])


def arms(paper: str, dataset: str) -> list[str]:
    """The config choices a rung runs: the paper's ``replicate.models_for`` (its own model as <paper>/<dataset>);
    at d128, where the paper may run more arms, those of the smallest rung (the ladder's arms)."""
    plan = OmegaConf.load(REPO_ROOT / "conf" / "paper" / f"{paper}.yaml").replicate
    return [f"{paper}/{dataset}" if m == paper else m for m in plan.models_for.get(dataset, plan.models_for[RUNGS[0]])]


def measure(paper: str, dataset: str, choice: str, data: Any, steps: int) -> dict[str, Any]:
    cfg = compose(paper, dataset, choice, f"scale.max_epochs={steps}", f"paper.protocol.curve_points={steps}",
                  "paper.protocol.curve_valid_tokens=64")  # a curve point after every step, almost free
    pin_threads(cfg)
    replication, run = replications.get(paper), make_run(cfg)
    seed_everything(1)
    model = replication.build_model(run, data)
    total = sum(p.numel() for p in model.parameters())
    expert = sum(p.numel() for layer in model.moe_layers() for p in layer.parameters(recurse=False))
    k = 2 if cfg.model.gate == "gshard" else 1
    active = total - expert + (expert * k // cfg.model.get("num_experts", 1) if model.moe_layers() else 0)
    t0, c0 = time.perf_counter(), time.process_time()
    summary = replication.train(run, model, data, 1, lambda m, s: None)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    p = cfg.paper.protocol
    per_step = cpu / summary["steps"]
    return {"paper": paper, "dataset": dataset, "model": str(cfg.model.name), "config": choice,
            "size": f"{p.layers}x{p.d_model}", "parameters": total, "active_parameters": active,
            "cpu_seconds_per_step": per_step, "wall_seconds_per_step": wall / summary["steps"],
            "estimated_minutes": per_step * p.steps * len(p.seeds) * EVAL_OVERHEAD / 60}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20, help="optimiser steps timed per arm")
    ap.add_argument("--papers", nargs="*", default=list(PAPERS))
    ap.add_argument("--rungs", nargs="*", default=list(RUNGS))
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "outputs" / "ladder_cost.json")
    args = ap.parse_args(argv)
    rows: list[dict[str, Any]] = []
    for paper in args.papers:
        for dataset in args.rungs:
            choices = arms(paper, dataset)
            data = replications.get(paper).load_data(make_run(compose(paper, dataset, choices[0])))
            for choice in choices:
                row = measure(paper, dataset, choice, data, args.steps)
                rows.append(row)
                print(f"{paper:>8} {row['size']:>6} {row['model']:>10}: {row['active_parameters']:>9,} active / "
                      f"{row['parameters']:>9,} params, {row['cpu_seconds_per_step'] * 1000:5.0f} ms/step CPU "
                      f"({row['wall_seconds_per_step'] * 1000:.0f} wall) -> {row['estimated_minutes']:5.1f} min",
                      flush=True)
    total = sum(r["estimated_minutes"] for r in rows)
    print(f"all rungs and arms x seeds: {total:.0f} min estimated on an idle core (CPU time)")
    write_json_atomic(args.out, {"arms": rows, "estimated_minutes": total, "steps_timed": args.steps,
                                 "load_average": os.getloadavg(), "environment": environment()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
