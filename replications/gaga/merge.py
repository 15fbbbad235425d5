"""Merge one-seed runner records into the protocol's result file, as if the runner had run all seeds.

The machine here is shared, so `make replicate-gaga`'s seeds were run as parallel one-seed jobs
(`python -m replications paper=gaga dataset=D model=M seed=S results_dir=DIR/S`), each through
`shared.runner.run` with the same code path. Every seed re-seeds everything (shared.seeding), so a
sequential run gives the same per-seed numbers on the same thread count.

    python -m replications.gaga.merge DIR dataset model [--out FOLDER]   # FOLDER/gaga/<dataset>/<model>.json

FOLDER defaults to outputs/results (a hand run's folder); name the committed results folder to replace a
protocol record there. The page (results/gaga/README.md) is rebuilt by `make report` (replications/gaga/report.py).
Only complete one-seed records are merged: an interrupted job's `<model>.partial.json` is never read.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from shared.atomic import write_json_atomic
from shared.merge import is_partial, merge_records
from shared.paths import HAND_RUNS

PAPER_FILE = Path(__file__).with_name("paper.yaml")


def merge(records: list[dict]) -> dict:
    """shared.merge over the protocol's seeds: complete only when every planned seed is in, so a partial merge
    never reaches the shared report. A partial record (an interrupted job) is refused."""
    if not records:
        raise ValueError("nothing to merge")
    if any(is_partial(r) or not r.get("complete") for r in records):
        raise ValueError("an incomplete (partial) record is among the inputs; merge only finished one-seed jobs")
    config = records[0]["config"]
    planned = config.get("scale", {}).get("seeds") or config.get("paper", {}).get("protocol", {}).get("seeds")
    out = merge_records(records, PAPER_FILE, planned=list(planned) if planned else None)
    out["merged_from"] = (f"{len(records)} one-seed jobs run in parallel (replications.gaga.merge); wall_seconds is "
                          "their sum, i.e. the time of a sequential run on an idle machine is about this")
    return out


def job_files(jobs: Path, dataset: str, model: str) -> list[Path]:
    """Each job's <seed>/gaga/<dataset>/<model>.json (never a .partial.json)."""
    return [p for p in sorted(jobs.glob(f"*/gaga/{dataset}/{model}.json")) if not p.name.endswith(".partial.json")]


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser()
    parser.add_argument("jobs", type=Path, help="folder holding <seed>/gaga/<dataset>/<model>.json")
    parser.add_argument("dataset")
    parser.add_argument("model")
    parser.add_argument("--out", type=Path, default=HAND_RUNS, help="results folder to write gaga/<dataset>/<model>.json in")
    args = parser.parse_args(argv)
    files = job_files(args.jobs, args.dataset, args.model)
    record = merge([json.loads(f.read_text()) for f in files])
    target = args.out / "gaga" / args.dataset / f"{args.model}.json"
    write_json_atomic(target, record)
    print(f"merged {len(files)} seeds -> {target}")
    return target


if __name__ == "__main__":
    main()
