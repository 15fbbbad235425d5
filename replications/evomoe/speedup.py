"""``python -m replications.evomoe.speedup RESULTS/evomoe/wikitext2``: EvoMoE v1's abstract metric.

"The DTS gate reaches Switch's validation perplexity 2.0x faster": for every model, the first curve point
(optimiser step) whose validation perplexity (curve subset, mean over seeds) is at or below Switch's final
one, and Switch's steps divided by it. Prints a markdown table. Equal steps cost different FLOPs (EvoMoE's
dense phase runs every expert); the active-expert column says how many ran per token.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from replications.evomoe.report import ORDER, load


def mean_curve(record: dict) -> tuple[list[int], np.ndarray]:
    curves = [run["train"]["curve"] for run in record["runs"]]
    return [p["step"] for p in curves[0]], np.mean([[p["valid_ppl_subset"] for p in c] for c in curves], axis=0)


def first_reaching(steps: list[int], ppl: np.ndarray, target: float) -> int | None:
    hit = np.nonzero(ppl <= target)[0]
    return int(steps[hit[0]]) if hit.size else None


def table(records: dict[str, dict], reference: str = "switch") -> str:
    if reference not in records:
        raise SystemExit(f"no complete {reference} result: nothing to measure against")
    ref_steps, ref_ppl = mean_curve(records[reference])
    target = float(ref_ppl[-1])
    ref_at = first_reaching(ref_steps, ref_ppl, target)
    lines = [f"Target: {reference}'s final validation PPL (curve subset) = {target:.1f}", "",
             "| model | final valid PPL (subset) | steps to target | speed-up vs " + reference +
             " | mean active experts |", "|---|---|---|---|---|"]
    for name in [n for n in ORDER if n in records]:
        steps, ppl = mean_curve(records[name])
        at = first_reaching(steps, ppl, target)
        active = records[name]["aggregate"]["mean_active_experts"]["mean"]
        speed = f"{ref_at / at:.2f}x" if at else "not reached"
        lines.append(f"| {name} | {ppl[-1]:.1f} | {at if at else '-'} | {speed} | {active:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    print(table(load(Path(argv[0]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
