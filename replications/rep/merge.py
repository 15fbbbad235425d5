"""``python -m replications.rep.merge <out_root> <per-seed root>...``: join single-seed result files.

Each (dataset, model) can be run one seed per process (``seed=N results_dir=<root_N>``), so that a run
cut short still leaves whole seeds behind. This joins the runs of every ``<root>/rep/<dataset>/<model>.json``
into one record of the runner's format with ``shared.merge``: same seeds => the same numbers as one
multi-seed run, because every seed starts from ``seed_everything(seed)``. Seeds missing from the
protocol are listed in ``missing_seeds`` and such a record is not ``complete``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from shared.atomic import write_json_atomic
from shared.merge import merge_records

PAPER = Path(__file__).with_name("paper.yaml")


def merge(records: list[dict[str, Any]]) -> dict[str, Any]:
    """shared.merge over the protocol's seeds: a record short of a seed is not complete (the report skips it)."""
    planned = records[0]["config"]["paper"]["protocol"]["seeds"]
    return merge_records(records, PAPER, planned=list(planned))


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
