"""``python -m replications.evomoe.merge_seeds OUT.json IN.json...``: one result file from per-seed runs.

For running the seeds of one model as separate processes (`python -m replications ... seed=N
results_dir=DIR_N`) on a shared machine: concatenates their `runs` (each seed once) and recomputes the
aggregate and the paper comparison exactly as shared/runner.py does for a multi-seed run (shared.merge).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from replications.evomoe import REPLICATION
from shared.atomic import write_json_atomic
from shared.merge import merge_records


def merge(inputs: list[Path]) -> dict:
    records = [json.loads(p.read_text()) for p in inputs]
    return merge_records(records, REPLICATION.paper_file, [str(p) for p in inputs])


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
