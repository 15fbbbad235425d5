"""``python -m replications.rep.merge <out_root> <per-seed root>...``: join single-seed result files.

Each (dataset, model) can be run one seed per process (``seed=N results_dir=<root_N>``), so that a run
cut short still leaves whole seeds behind. ``merge_roots`` joins the complete ``<root>/rep/<dataset>/<model>.json``
records (never a ``*.partial.json``) into one record per (dataset, model) of the runner's format with
``shared.merge``: same seeds => the same numbers as one multi-seed run, because every seed starts from
``seed_everything(seed)``. Seeds missing from the protocol are listed in ``missing_seeds`` and such a record is
not ``complete``. ``main`` writes them under the ``<out_root>`` it is given (full.sh: results).
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


def merge_roots(roots: list[Path]) -> dict[tuple[str, str], dict[str, Any]]:
    """(dataset, model) -> the merged record of every complete single-seed record under the roots."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for root in roots:
        for path in sorted(root.glob("rep/*/*.json")):
            if path.name.endswith(".partial.json"):
                continue
            record = json.loads(path.read_text())
            if record.get("complete"):
                groups.setdefault((record["dataset"], record["model"]), []).append(record)
    return {key: merge(records) for key, records in sorted(groups.items())}


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m replications.rep.merge <out_root> <per-seed root>...", file=sys.stderr)
        return 2
    for (dataset, model), merged in merge_roots([Path(a) for a in argv[1:]]).items():
        write_json_atomic(Path(argv[0]) / "rep" / dataset / f"{model}.json", merged)
        print(f"{dataset}/{model}: seeds {[r['seed'] for r in merged['runs']]}, missing {merged['missing_seeds']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
