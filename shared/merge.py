"""Merge result records of one (paper, dataset, model) run as parallel one-seed jobs into one protocol record.

On a shared machine the seeds of a protocol can run as separate processes
(``python -m replications paper=P dataset=D model=M seed=S results_dir=DIR/S``). Every seed re-seeds
everything (shared.seeding), so each seed's numbers equal those of a sequential run on the same machine
and thread count; this concatenates their runs and recomputes aggregate and comparison as the runner does.

    python -m shared.merge replications/<paper>/paper.yaml OUT.json IN.json [IN.json ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from shared.atomic import write_json_atomic
from shared.reference import compare, load_paper
from shared.stats import aggregate

KEY = ("paper", "dataset", "model", "scale")


def merge_records(records: list[dict[str, Any]], paper_file: Path, sources: list[str] | None = None) -> dict[str, Any]:
    if not records:
        raise ValueError("nothing to merge")
    first = records[0]
    for r in records:
        if [r.get(k) for k in KEY] != [first.get(k) for k in KEY]:
            raise ValueError(f"records disagree on {KEY}: {[r.get(k) for k in KEY]} vs {[first.get(k) for k in KEY]}")
        if not r.get("complete"):
            raise ValueError(f"incomplete record for {r['dataset']}/{r['model']}: finish it before merging")
    runs = sorted((run for r in records for run in r["runs"]), key=lambda run: run["seed"])
    seeds = [run["seed"] for run in runs]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"duplicate seeds: a seed appears twice: {seeds}")
    agg = aggregate([run["metrics"] for run in runs])
    return {
        **first,
        "comparison": compare(load_paper(paper_file), first["dataset"], first["model"], agg),
        "aggregate": agg,
        "runs": runs,
        "wall_seconds": round(sum(r["wall_seconds"] for r in records), 2),  # = a sequential run's time
        "data_seconds": round(sum(r["data_seconds"] for r in records), 2),
        "peak_memory_mb": max(r["peak_memory_mb"] for r in records),
        "config": {**first["config"], "seed": None},  # the merged record covers the listed seeds
        "merged_from": sources or f"{len(records)} one-seed jobs",
    }


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    paper_file, out, inputs = Path(argv[0]), Path(argv[1]), [Path(p) for p in argv[2:]]
    record = merge_records([json.loads(p.read_text()) for p in inputs], paper_file, [str(p) for p in inputs])
    write_json_atomic(out, record)
    print(f"wrote {out} ({len(record['runs'])} seeds)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
