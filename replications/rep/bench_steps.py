"""``python -m replications.rep.bench_steps [--steps N]``: CPU cost of one optimiser step of every base recipe.

For each (dataset, model) of conf/paper/rep.yaml ``replicate``, builds the committed recipe (conf/model/rep_*.yaml),
times N optimiser steps after 2 warm-up steps (CPU time of this process, one thread) and multiplies by the
recipe's step count: the CPU hours a full training of that recipe costs on this CPU (one core), before any
evaluation. It says nothing about the MRR reached (results/rep/budget/ does, for the recipe it measures).
Writes ``--out`` (default outputs/results/rep/bench_steps.json; REP's page reads results/rep/bench_steps.json)
with the command, commit, hardware and versions. It runs alone among the project's benchmarks (shared.exclusive
lock, waited for) and records the 1-minute load average before and after. ``--update`` re-measures only the rows
asked for (``--datasets`` x ``--models``) in an existing ``--out``: each new row carries its own provenance
(``measured``: command, commit, steps, load, CPU) and the file's top-level record stays that of the other rows.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch
from omegaconf import OmegaConf

from replications.rep import REPLICATION, base_steps, hparams
from replications.rep.budget import compose, run_of
from replications.rep.train import fit_recipe
from shared.atomic import write_json_atomic
from shared.exclusive import exclusive
from shared.paths import HAND_RUNS
from shared.runinfo import environment, git_state

OUT = HAND_RUNS / "rep" / "bench_steps.json"  # the committed one: --out results/rep/bench_steps.json


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--datasets", default="fb15k_237,wn18rr")
    ap.add_argument("--models", default="transe,distmult,complex,rotate")
    ap.add_argument("--override", action="append", default=[], help="a Hydra override (smoke tests)")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--update", action="store_true", help="replace only the measured rows of an existing --out")
    args = ap.parse_args(argv)
    if args.update and not Path(args.out).is_file():
        raise SystemExit(f"--update needs an existing --out file; {args.out} is absent (drop --update to write it)")
    git = git_state()  # the code that runs, before anything else can change the checkout
    with exclusive() as alone:  # no other benchmark of the project times at the same time
        rows = measure(args)
    if args.update:
        update(Path(args.out), rows, args, alone, git)
        print(f"updated {len(rows)} row(s) of {args.out}")
        return 0
    write_json_atomic(Path(args.out), {"what": "CPU time per optimiser step of each committed base recipe, one thread",
                                       "steps_timed": args.steps, "rows": rows,
        "load_average_1_5_15min": os.getloadavg(), "semaphore": alone["how"], "exclusive": alone,
        **environment(git)})
    print(f"wrote {args.out}")
    return 0


def update(out: Path, rows: list[dict], args: argparse.Namespace, alone: dict, git: dict) -> None:
    """Replace the (dataset, model) rows just measured in ``out``, each with its own provenance."""
    old = json.loads(out.read_text())
    env = environment(git)
    stamp = {"command": env["command"], "git_commit": env["git_commit"], "git_dirty": env["git_dirty"],
             "steps_timed": args.steps, "cpu": env["hardware"]["cpu"], "versions": env["versions"],
             "load_average_1_5_15min": os.getloadavg(), "exclusive": alone}
    new = {(r["dataset"], r["model"]): r | {"measured": stamp} for r in rows}
    measured = [list(k) for k in new]
    merged = [new.pop((r["dataset"], r["model"]), r) for r in old["rows"]] + list(new.values())  # in place, new last
    updates = old.get("updated_rows", []) + [{"rows": measured, "command": env["command"],
                                              "git_commit": env["git_commit"]}]
    write_json_atomic(out, old | {"rows": merged, "updated_rows": updates})


def measure(args: argparse.Namespace) -> list[dict]:
    torch.set_num_threads(1)
    rows = []
    for dataset in args.datasets.split(","):
        data = None
        for name in args.models.split(","):
            cfg = compose(dataset, name, args.override)
            data = data or REPLICATION.load_data(run_of(cfg))
            hp = hparams(cfg)
            torch.manual_seed(0)
            model = REPLICATION.build_model(run_of(cfg), data)
            fit_recipe(model, data.train, OmegaConf.create(hp), 2, 0, lambda m, s: None)  # warm-up
            started = time.process_time()
            fit_recipe(model, data.train, OmegaConf.create(hp), args.steps, 1, lambda m, s: None)
            per_step = (time.process_time() - started) / args.steps
            total = base_steps(hp, len(data.train))
            row = {"dataset": dataset, "model": name, "recipe": hp.get("recipe", "negative_sampling"),
                   "dim": hp["dim"], "recipe_steps": total, "cpu_seconds_per_step": round(per_step, 4),
                   "recipe_cpu_hours": round(per_step * total / 3600, 1)}
            rows.append(row)
            print(f"{dataset:9s} {name:8s} dim {hp['dim']:5d}  {per_step * 1000:8.1f} ms/step  x {total} steps = "
                  f"{row['recipe_cpu_hours']} CPU h", flush=True)
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
