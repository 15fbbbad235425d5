"""Merge one-seed runner records into the protocol's result file, as if the runner had run all seeds.

The machine here is shared, so `make replicate-gaga`'s seeds were run as parallel one-seed jobs
(`python -m replications paper=gaga dataset=D model=M seed=S results_dir=DIR/S`), each through
`shared.runner.run` with the same code path. Every seed re-seeds everything (shared.seeding), so a
sequential run gives the same per-seed numbers on the same thread count.

    python -m replications.gaga.merge DIR dataset model [--out results]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from shared.atomic import write_json_atomic
from shared.reference import compare, load_paper
from shared.stats import aggregate

PAPER_FILE = Path(__file__).with_name("paper.yaml")
ROOT = Path(__file__).resolve().parents[2]


def merge(records: list[dict]) -> dict:
    if not records:
        raise ValueError("nothing to merge")
    first = records[0]
    for r in records:
        key = ("paper", "dataset", "model", "scale")
        if [r[k] for k in key] != [first[k] for k in key]:
            raise ValueError(f"records disagree: {r['dataset']}/{r['model']} vs {first['dataset']}/{first['model']}")
        if not r.get("complete"):
            raise ValueError(f"incomplete record for {r['dataset']}/{r['model']}")
    runs = sorted((run for r in records for run in r["runs"]), key=lambda run: run["seed"])
    seeds = [run["seed"] for run in runs]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"duplicate seeds: {seeds}")
    agg = aggregate([run["metrics"] for run in runs])
    config = dict(first["config"], seed=None)
    return {
        "paper": first["paper"], "dataset": first["dataset"], "model": first["model"], "scale": first["scale"],
        "complete": True,
        "comparison": compare(load_paper(PAPER_FILE), first["dataset"], first["model"], agg),
        "aggregate": agg, "runs": runs,
        "wall_seconds": round(sum(r["wall_seconds"] for r in records), 2),
        "data_seconds": round(sum(r["data_seconds"] for r in records), 2),
        "peak_memory_mb": max(r["peak_memory_mb"] for r in records),
        "environment": first["environment"], "config": config,
        "merged_from": f"{len(records)} one-seed jobs run in parallel (replications.gaga.merge); wall_seconds is "
                       "their sum, i.e. the time of a sequential run on an idle machine is about this",
    }


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser()
    parser.add_argument("jobs", type=Path, help="folder holding <seed>/gaga/<dataset>/<model>.json")
    parser.add_argument("dataset")
    parser.add_argument("model")
    parser.add_argument("--out", type=Path, default=ROOT / "results")
    args = parser.parse_args(argv)
    files = sorted(args.jobs.glob(f"*/gaga/{args.dataset}/{args.model}.json"))
    record = merge([json.loads(f.read_text()) for f in files])
    target = args.out / "gaga" / args.dataset / f"{args.model}.json"
    write_json_atomic(target, record)
    print(f"merged {len(files)} seeds -> {target}")
    return target


if __name__ == "__main__":
    main()
