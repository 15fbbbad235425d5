"""The Tiny Shakespeare part of EvoMoE's page (``blocks``): every arm's validation loss against the character
bigram floor and nanoGPT's documented dense run, the paired differences to EvoMoE and the per-seed steps to
Switch's final validation loss.

The two claims' verdicts on this dataset are Claims (report.char_claims, charclaims.py), at the page's top; the
table says how far below the floor every arm ends, the precondition for judging them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import yaml

from replications.evomoe import charclaims
from shared.paper_report import Table

DATASET = "tinyshakespeare"
Floor = Callable[[], float | None]


def _ci(a: dict[str, float], digits: int = 3) -> str:
    return f"{a['mean']:.{digits}f} ± {a['std']:.{digits}f} [{a['ci95_low']:.{digits}f}, {a['ci95_high']:.{digits}f}]"


def reference(paper_file) -> dict[str, Any] | None:
    """nanoGPT's dense-run entry of paper.yaml (the anchor the dense arm is compared with)."""
    paper = yaml.safe_load(paper_file.read_text())
    return next((e for e in paper["reported"] if e["dataset"] == DATASET and e["metric"] == "valid_loss"
                 and e["value"] is not None), None)


def model_table(records: dict[str, dict[str, Any]], floor: float | None, ref: dict[str, Any] | None) -> Table:
    header = ["model", "valid loss, nats/char (mean ± std) [95% CI]", "below the bigram floor by", "valid PPL",
              "train tokens/s", "mean active experts / token", "seeds", "wall time"]
    rows = []
    for name, r in records.items():
        a = r["aggregate"]
        margin = "-" if floor is None else f"{floor - a['valid_loss']['mean']:.3f}"
        rows.append([name, _ci(a["valid_loss"]), margin, f"{a['valid_ppl']['mean']:.2f}",
                     f"{a['train_tokens_per_s']['mean']:.0f}", f"{a['mean_active_experts']['mean']:.2f}",
                     a["valid_loss"]["n"], f"{r['wall_seconds'] / 60:.1f} min"])
    if floor is not None:
        rows.append(["bigram (Kneser-Ney counts of the train part; replications/moe/ngram.py)", f"{floor:.3f}", "0",
                     f"{math.exp(floor):.2f}", "-", "-", "-", "-"])
    if ref is not None:
        rows.append([f"nanoGPT, dense ({ref['kind']}: {ref['source']})", f"{ref['value']:.2f}", "-", "-", "-", "-",
                     "1", "-"])
    return Table(header, rows, note="Validation = the last 10% of the text (nanoGPT's split; no test part). The "
                                    "dense arm is nanoGPT's CPU configuration (conf/dataset/tinyshakespeare.yaml).")


def blocks(records: dict[str, dict[str, Any]], paired: Callable[..., list[dict[str, Any]]], paper_file,
           bigram: float | None) -> tuple[list[Any], dict[str, Any]]:
    """The page's blocks for this dataset and their data; `paired` is report.paired_checks, `bigram` the floor's
    validation loss (bigram_floor)."""
    checks = paired(records, metric="valid_loss")
    out: list[Any] = ["## Character-level Tiny Shakespeare (nanoGPT's CPU configuration, every FFN an MoE layer)",
                      model_table(records, bigram, reference(paper_file))]
    if checks:
        out += ["Paired by seed, validation loss of the arm minus EvoMoE's (positive = EvoMoE better); the first "
                "claim's verdict on this dataset reads the arms it names:",
                Table(["arm", "named in the claim", "difference (mean)", "95% CI", "direction"],
                      [[c["baseline"], "yes" if c["in_claim"] else "no", f"{c['baseline_minus_evomoe']:.4f}",
                        f"[{c['ci95'][0]:.4f}, {c['ci95'][1]:.4f}]", c["status"]] for c in checks])]
    speed = charclaims.speed(records)
    if speed is not None:
        out += ["### Steps to Switch's final validation loss, per seed (the v1 abstract's speed claim; charclaims.py)",
                charclaims.speed_table(speed)]
    clears = None if bigram is None else all(r["aggregate"]["valid_loss"]["mean"] < bigram for r in records.values())
    return out, {"bigram_valid_loss": bigram, "every_arm_below_floor": clears, "checks": checks,
                 "steps_to_switch": speed}
