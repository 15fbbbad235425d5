"""``python -m replications.moe.plateau``: how close each rung of the Tiny Shakespeare scale ladder is to a plateau.

For every record of the ladder's rungs (results/<paper>/tinyshakespeare*/<arm>.json): the validation loss on the
curve's subset (nats/char, the log of its ``valid_ppl_subset``) at the end, how much it fell over the last quarter
of the steps, and over the quarter before it, mean over seeds. A model still far from its plateau at
the step budget would make a size comparison one of training speed, not of capacity: the config headers
(conf/dataset/tinyshakespeare_<layers>x<d>.yaml) quote these numbers. Reads committed records only.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from shared.paths import RESULTS

PAPERS = ("evomoe", "ta_moe", "flexmoe")


def curve_loss(run: dict[str, Any]) -> list[tuple[int, float]]:
    return [(int(p["step"]), math.log(p["valid_ppl_subset"])) for p in run["train"]["curve"]
            if p.get("valid_ppl_subset")]


def plateau(record: dict[str, Any], tail: float = 0.25) -> dict[str, float]:
    """End loss and its fall over the last ``tail`` of the steps and over the ``tail`` before, mean over seeds."""
    ends, falls, earlier = [], [], []
    for run in record["runs"]:
        points = curve_loss(run)
        last_step = points[-1][0]
        at = [[loss for step, loss in points if step <= last_step * (1 - k * tail)][-1] for k in (1, 2)]
        ends.append(points[-1][1])
        falls.append(at[0] - points[-1][1])
        earlier.append(at[1] - at[0])
    return {"end": float(np.mean(ends)), "tail_fall": float(np.mean(falls)), "fall_before": float(np.mean(earlier))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    for paper in PAPERS:
        for path in sorted((args.results / paper).glob("tinyshakespeare*/*.json")):
            record = json.loads(path.read_text())
            if not record.get("complete") or not record.get("runs"):
                continue
            p = plateau(record)
            print(f"{paper:>8} {record['dataset']:>22} {record['model']:>10}: end {p['end']:.3f} nats/char; fell "
                  f"{p['fall_before']:.3f} over the third quarter of the steps, {p['tail_fall']:.3f} over the last")
    return 0


if __name__ == "__main__":
    sys.exit(main())
