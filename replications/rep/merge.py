"""``python -m replications.rep.merge <out_root> <per-seed root>...``: join single-seed result files.

Each (dataset, model) can be run one seed per process (``seed=N results_dir=<root_N>``), so that a run
cut short still leaves whole seeds behind. This joins the runs of every ``<root>/rep/<dataset>/<model>.json``
into one record of the runner's format (``shared.runner.run``): same seeds => the same numbers as one
multi-seed run, because every seed starts from ``seed_everything(seed)``. Seeds missing from the
protocol are listed in ``missing_seeds``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from shared.atomic import write_json_atomic
from shared.reference import compare, load_paper
from shared.stats import aggregate

PAPER = Path(__file__).with_name("paper.yaml")


def merge(records: list[dict[str, Any]]) -> dict[str, Any]:
    runs = sorted((run for r in records for run in r["runs"]), key=lambda run: run["seed"])
    seeds = [run["seed"] for run in runs]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"duplicate seeds {seeds} for {records[0]['dataset']}/{records[0]['model']}")
    first = records[0]
    agg = aggregate([run["metrics"] for run in runs])
    protocol = first["config"]["paper"]["protocol"]["seeds"]
    out = {k: first[k] for k in ("paper", "dataset", "model", "scale")}
    out |= {
        "complete": True,
        "missing_seeds": [s for s in protocol if s not in seeds],
        "comparison": compare(load_paper(PAPER), first["dataset"], first["model"], agg),
        "aggregate": agg,
        "runs": runs,
        "wall_seconds": round(sum(r["wall_seconds"] for r in records), 2),
        "data_seconds": round(sum(r["data_seconds"] for r in records), 2),
        "peak_memory_mb": max(r["peak_memory_mb"] for r in records),
        "environment": first["environment"],
        "config": first["config"] | {"seed": None, "results_dir": None},
        "merged_from": len(records),
    }
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m replications.rep.merge <out_root> <per-seed root>...", file=sys.stderr)
        return 2
    out_root, roots = Path(argv[0]), [Path(a) for a in argv[1:]]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for root in roots:
        for path in sorted(root.glob("rep/*/*.json")):
            record = json.loads(path.read_text())
            if record.get("complete"):
                groups.setdefault((record["dataset"], record["model"]), []).append(record)
    for (dataset, model), records in sorted(groups.items()):
        merged = merge(records)
        write_json_atomic(out_root / "rep" / dataset / f"{model}.json", merged)
        print(f"{dataset}/{model}: seeds {[r['seed'] for r in merged['runs']]}, missing {merged['missing_seeds']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
