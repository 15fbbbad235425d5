"""EvoMoE's page as data (``build``): the claims, judged from paper.yaml by shared.claims (EvoMoE's own parts, the
steps to Switch's loss, the WikiText-2 bigram precondition and the scale, in measures.py), then per dataset the
models against the bigram floor, the paired differences to EvoMoE, the steps to Switch's final loss and the curves.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from replications.evomoe import measures, speedup
from replications.moe import charfloor
from shared.claims import paper_claims
from shared.claims.intervals import student_t
from shared.report.blocks import CHAR_BIGRAM, CHAR_SECTION, agg_text, hardware_line, interval, minutes
from shared.report.figures import Panel, Plot, Series, draw
from shared.report.paper_hook import Figure, PaperReport, PaperResults, Table
from shared.verdict import INCONCLUSIVE, direction_status

PAPER = Path(__file__).with_name("paper.yaml")
DATASET, CHARS = "wikitext2", "tinyshakespeare"
ORDER = ["evomoe", "dense", "switch", "gshard", "hash", "base"]
CLAIM_BASELINES = ["switch", "base", "hash"]  # StableMoE is named by the paper but not implemented here
Column = tuple[str, Callable[[dict[str, Any]], Any]]


def _ci(metric: str, digits: int) -> Callable[[dict[str, Any]], str]:
    return lambda r: agg_text(r["aggregate"][metric], digits, ci=True)


def model_table(records: dict[str, dict[str, Any]], columns: list[Column], extra: list[list[Any]], note: str = "") -> Table:
    """One row per model: ``columns`` (header, value of a record), then tokens/s, active experts, seeds, wall time."""
    def agg(r: dict[str, Any], name: str) -> float:
        return r["aggregate"][name]["mean"]

    rows = [[name, *(fn(r) for _, fn in columns), f"{agg(r, 'train_tokens_per_s'):.0f}",
             f"{agg(r, 'mean_active_experts'):.2f}", len(r["runs"]), minutes(r['wall_seconds'])]
            for name, r in records.items()]
    width = len(columns) + 5
    return Table(["model", *(h for h, _ in columns), "train tokens/s", "mean active experts / token", "seeds",
                  "wall time"], rows + [row + ["-"] * (width - len(row)) for row in extra], note=note)


def paired_table(records: dict[str, dict[str, Any]], metric: str, digits: int) -> Table | None:
    """Per baseline: its metric minus EvoMoE's, paired by seed (positive = EvoMoE better), 95% t-interval and
    direction; the claim's verdicts (shared.claims) judge the baselines it names the same way."""
    if "evomoe" not in records:
        return None
    evo = {run["seed"]: run["metrics"][metric] for run in records["evomoe"]["runs"]}
    rows = []
    for base in [b for b in dict.fromkeys(CLAIM_BASELINES + ORDER) if b in records and b != "evomoe"]:
        other = {run["seed"]: run["metrics"][metric] for run in records[base]["runs"]}
        iv = student_t([other[s] - evo[s] for s in sorted(set(evo) & set(other))])
        status = direction_status(iv.low, iv.high) if iv.has_spread else INCONCLUSIVE
        rows.append([base, "yes" if base in CLAIM_BASELINES else "no", f"{iv.effect:.{digits}f}",
                     interval(iv.low, iv.high, digits), status])
    return Table(["baseline", "named in the claim", "difference (mean)", "95% CI", "direction"], rows)


def speedup_table(target: float, table: list[dict[str, Any]]) -> Table:
    return Table(["model", "final valid PPL (subset)", "steps to target", "speed-up vs switch", "mean active experts"],
                 [[r["model"], f"{r['final_valid_ppl_subset']:.1f}", r["steps_to_target"] or "-",
                   f"{r['speedup']:.2f}x" if r["speedup"] else "not reached", f"{r['mean_active_experts']:.2f}"]
                  for r in table],
                 note=f"Target: switch's final validation PPL (curve subset, mean over seeds) = {target:.1f}. Equal steps "
                      "cost different FLOPs (EvoMoE's dense phase runs every expert; see active experts).")


def seed_speed_table(rows: list[dict[str, Any]]) -> Table:
    return Table(["seed", "target: Switch's final validation-subset loss (nats/char)", "Switch's steps to it",
                  "EvoMoE's steps to it", "Switch's steps / EvoMoE's"],
                 [[r["seed"], f"{math.log(r['target_valid_ppl_subset']):.4f}", r["reference_steps"],
                   r["model_steps"] if r["reached"] else f"not reached by {r['model_last_step']}",
                   f"{r['ratio']:.2f}x" + ("" if r["reached"] else " (bound)")] for r in rows],
                 note="Steps are the first curve point at or below the target. A seed where EvoMoE never reaches it "
                      "counts as Switch's steps / the run's last step, at most 1 (an upper bound on its true ratio). "
                      "Equal steps cost different FLOPs: EvoMoE's dense phase runs every expert.")


def plot(records: dict[str, dict[str, Any]]) -> Plot:
    def mean_curve(key: str) -> list[Series]:
        out = []
        for name, r in records.items():
            curves = [run["train"]["curve"] for run in r["runs"]]
            out.append(Series(name, [p["step"] for p in curves[0]], np.mean([[p[key] for p in c] for c in curves], axis=0),
                              "o-", ms=3))
        return out

    return Plot([Panel("Perplexity over training (mean over seeds)", "optimiser step", "validation PPL (first 8k tokens)",
                       mean_curve("valid_ppl_subset"), log_y=True, legend=10),
                 Panel("Active experts over training", "optimiser step", "active experts per token (mean over MoE layers)",
                       mean_curve("active_experts"), legend=None)], panel_size=(5.5, 4))


def wikitext_part(records: dict[str, dict[str, Any]]) -> tuple[list[Any], dict[str, Any]]:
    bigram = measures.wikitext_bigram(records)
    hw = next(iter(records.values()))["environment"]["hardware"]
    blocks: list[Any] = [
        f"# EvoMoE vs Switch / GShard / Hash / BASE / dense on WikiText-2 (small GPT, {'GPU' if hw.get('gpu') else 'CPU'})",
        model_table(records, [("valid PPL (mean ± std) [95% CI]", _ci("valid_ppl", 1)),
                              ("test PPL (mean ± std) [95% CI]", _ci("test_ppl", 1))],
                    [["bigram (Kneser-Ney counts of the same training tokens; replications/evomoe/ngram.py)",
                      f"{bigram['valid_ppl']:.1f}", f"{bigram['test_ppl']:.1f} (full train set: "
                                                    f"{bigram['test_ppl_full_train']:.1f})"]])]
    paired = paired_table(records, "test_ppl", 1)
    if paired is not None:
        blocks += ["Paired by seed, test PPL of the baseline minus EvoMoE's (positive = EvoMoE better):", paired]
    steps = speedup.rows(records)
    if steps is not None:
        blocks += ["## Steps to Switch's final validation perplexity (the v1 abstract's metric; speedup.py)",
                   speedup_table(*steps)]
    blocks += [hardware_line(hw) + " Tokens/s counts training steps only (EvoMoE's soft phase runs several experts per "
               "token; see active experts).",
               Figure("wikitext2_curves.png", draw=lambda: draw(plot(records)), caption="validation PPL and active experts",
                      dpi=120)]
    return blocks, {"bigram": bigram, "steps_to_switch": None if steps is None else {"target": steps[0], "rows": steps[1]}}


def char_part(records: dict[str, dict[str, Any]]) -> tuple[list[Any], dict[str, Any]]:
    floor = charfloor.bigram_floor()
    paper = yaml.safe_load(PAPER.read_text())
    ref = next((e for e in paper["reported"] if e["dataset"] == CHARS and e["metric"] == "valid_loss"), None)
    extra = [[CHAR_BIGRAM, f"{floor:.3f}", "0",
              f"{math.exp(floor):.2f}"]]
    if ref is not None:
        extra.append([f"nanoGPT, dense ({ref['kind']}: {ref['source']})", f"{ref['value']:.2f}", "-", "-", "-", "-", "1"])
    blocks: list[Any] = [
        CHAR_SECTION,
        model_table(records, [("valid loss, nats/char (mean ± std) [95% CI]", _ci("valid_loss", 3)),
                              ("below the bigram floor by", lambda r: f"{floor - r['aggregate']['valid_loss']['mean']:.3f}"),
                              ("valid PPL", lambda r: f"{r['aggregate']['valid_ppl']['mean']:.2f}")], extra,
                    note="Validation = the last 10% of the text (nanoGPT's split; no test part). The dense arm is "
                         "nanoGPT's CPU configuration (conf/dataset/tinyshakespeare.yaml).")]
    paired = paired_table(records, "valid_loss", 4)
    if paired is not None:
        blocks += ["Paired by seed, validation loss of the arm minus EvoMoE's (positive = EvoMoE better):", paired]
    rows = measures.speed_rows(records["evomoe"], records["switch"]) if {"evomoe", "switch"} <= set(records) else None
    if rows:
        blocks += ["### Steps to Switch's final validation loss, per seed (the v1 abstract's speed claim; measures.py)",
                   seed_speed_table(rows)]
    return blocks, {"bigram_valid_loss": floor, "steps_to_switch": rows,
                    "every_arm_below_floor": all(r["aggregate"]["valid_loss"]["mean"] < floor for r in records.values())}


def build(results: PaperResults) -> PaperReport | None:
    """The page from the WikiText-2 and Tiny Shakespeare records (None without any); the claims come first."""
    parts = {d: {m: r for m in ORDER if (r := results.record(d, m)) is not None} for d in (DATASET, CHARS)}
    if not any(parts.values()):
        return None
    claims = paper_claims(PAPER, results)
    blocks: list[Any] = []
    data: dict[str, Any] = {}
    if parts[DATASET]:
        blocks, data = wikitext_part(parts[DATASET])
    if parts[CHARS]:
        more, data[CHARS] = char_part(parts[CHARS])
        blocks += more
    return PaperReport(blocks=blocks, claims=claims, data=data)
