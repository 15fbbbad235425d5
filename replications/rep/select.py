"""``python -m replications.rep.select <sweep_dir>``: pick the REP alpha / khop with the best validation MRR.

Reads every result file a Hydra sweep wrote under <sweep_dir> (one per alpha / khop choice), ranks them
on ``val_mrr_rep`` only (the paper's select_metric), and prints the test metrics of the winner.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m replications.rep.select <sweep results dir>", file=sys.stderr)
        return 2
    records = [json.loads(p.read_text()) for p in sorted(Path(argv[0]).rglob("rep/*/*.json"))]
    records = [r for r in records if r.get("complete")]
    if not records:
        print(f"no complete REP result files under {argv[0]}", file=sys.stderr)
        return 1
    key = "val_mrr_rep"
    records.sort(key=lambda r: r["aggregate"][key]["mean"], reverse=True)
    for r in records:
        rep, agg = r["runs"][0]["train"]["rep"], r["aggregate"]
        print(f"{r['dataset']:<10} {r['model']:<9} alpha={rep['alpha']:<5} khop={rep['khop']:<3} "
              f"val_mrr_rep={agg[key]['mean']:.4f}  test_mrr_rep={agg['test_mrr_rep']['mean']:.4f}  "
              f"(base val {agg['val_mrr_base']['mean']:.4f}, test {agg['test_mrr_base']['mean']:.4f})")
    best = records[0]
    print(f"selected on {key}: alpha={best['runs'][0]['train']['rep']['alpha']} "
          f"khop={best['runs'][0]['train']['rep']['khop']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
