"""``python -m replications.evomoe.merge_seeds OUT.json IN.json...``: one result file from per-seed runs.

For running the seeds of one model as separate processes (`python -m replications ... seed=N
results_dir=DIR_N`) on a shared machine: concatenates their `runs` (each seed once) and recomputes the
aggregate and the paper comparison exactly as shared/runner.py does for a multi-seed run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from replications.evomoe import REPLICATION
from shared.atomic import write_json_atomic
from shared.reference import compare, load_paper
from shared.stats import aggregate


def merge(inputs: list[Path]) -> dict:
    records = [json.loads(p.read_text()) for p in inputs]
    first = records[0]
    for r in records:
        if not r.get("complete") or (r["paper"], r["dataset"], r["model"]) != (first["paper"], first["dataset"], first["model"]):
            raise ValueError(f"cannot merge: {r['paper']}/{r['dataset']}/{r['model']} (complete={r.get('complete')})")
    runs = sorted((run for r in records for run in r["runs"]), key=lambda run: run["seed"])
    seeds = [run["seed"] for run in runs]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"a seed appears twice: {seeds}")
    agg = aggregate([run["metrics"] for run in runs])
    paper = load_paper(REPLICATION.paper_file)
    config = dict(first["config"])
    config["seed"] = None  # the merged record covers the protocol's seeds
    return {**first, "comparison": compare(paper, first["dataset"], first["model"], agg), "aggregate": agg,
            "runs": runs, "wall_seconds": round(sum(r["wall_seconds"] for r in records), 2),
            "data_seconds": round(sum(r["data_seconds"] for r in records), 2),
            "peak_memory_mb": max(r["peak_memory_mb"] for r in records), "config": config,
            "merged_from": [str(p) for p in inputs]}


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m replications.evomoe.merge_seeds OUT.json IN.json [IN.json...]", file=sys.stderr)
        return 2
    out = Path(argv[0])
    write_json_atomic(out, merge([Path(p) for p in argv[1:]]))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
