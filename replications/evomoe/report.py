"""EvoMoE's page as data (``build``): the claims, judged from paper.yaml by shared.claims (EvoMoE's own parts, the
steps to Switch's loss, the WikiText-2 bigram precondition and the scale, in measures.py), then per dataset the
models against the bigram floor, the paired differences to EvoMoE, the steps to Switch's final loss and the curves.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from replications.evomoe import measures, speedup
from replications.moe import charfloor
from shared.claims import paper_claims
from shared.claims.intervals import student_t
from shared.reference import read_paper_yaml
from shared.report.blocks import CHAR_SECTION, CHAR_VALIDATION, hardware_line, interval, ordered
from shared.report.columns import MODEL, SEEDS, WALL, Column, agg_column, char_columns, char_floor_row, column_table, mean_column
from shared.report.figures import Panel, Plot, Series, draw
from shared.report.paper_hook import Figure, PaperReport, PaperResults, Table
from shared.verdict import INCONCLUSIVE, direction_status

PAPER = Path(__file__).with_name("paper.yaml")
DATASET, CHARS = "wikitext2", "tinyshakespeare"
ORDER = ["evomoe", "dense", "switch", "gshard", "hash", "base"]
CLAIM_BASELINES = ["switch", "base", "hash"]  # StableMoE is named by the paper but not implemented here


def model_table(records: dict[str, dict[str, Any]], columns: list[Column], extra: list[list[Any]], note: str = "") -> Table:
    """One row per model: ``columns``, then tokens/s, active experts, seeds, wall time."""
    return column_table(records.values(), [MODEL, *columns, mean_column("train tokens/s", "train_tokens_per_s", 0),
                                           mean_column("mean active experts / token", "mean_active_experts"), SEEDS, WALL],
                        extra, note=note)


def paired_blocks(records: dict[str, dict[str, Any]], metric: str, digits: int, what: str) -> list[Any]:
    """Per baseline: its metric minus EvoMoE's, paired by seed (positive = EvoMoE better), 95% t-interval and
    direction; the claim's verdicts (shared.claims) judge the baselines it names the same way."""
    if "evomoe" not in records:
        return []
    evo = {run["seed"]: run["metrics"][metric] for run in records["evomoe"]["runs"]}
    rows = []
    for base in [b for b in dict.fromkeys(CLAIM_BASELINES + ORDER) if b in records and b != "evomoe"]:
        other = {run["seed"]: run["metrics"][metric] for run in records[base]["runs"]}
        iv = student_t([other[s] - evo[s] for s in sorted(set(evo) & set(other))])
        status = direction_status(iv.low, iv.high) if iv.has_spread else INCONCLUSIVE
        rows.append([base, "yes" if base in CLAIM_BASELINES else "no", f"{iv.effect:.{digits}f}",
                     interval(iv.low, iv.high, digits), status])
    return [f"Paired by seed, {what} minus EvoMoE's (positive = EvoMoE better):",
            Table(["baseline", "named in the claim", "difference (mean)", "95% CI", "direction"], rows)]


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
        return [Series(name, *speedup.mean_curve(r, key), "o-", ms=3) for name, r in records.items()]

    return Plot([Panel("Perplexity over training (mean over seeds)", "optimiser step", "validation PPL (first 8k tokens)",
                       mean_curve("valid_ppl_subset"), log_y=True, legend=10),
                 Panel("Active experts over training", "optimiser step", "active experts per token (mean over MoE layers)",
                       mean_curve("active_experts"), legend=None)], panel_size=(5.5, 4))


def wikitext_part(records: dict[str, dict[str, Any]]) -> tuple[list[Any], dict[str, Any]]:
    bigram = measures.wikitext_bigram(records)
    hw = next(iter(records.values()))["environment"]["hardware"]
    blocks: list[Any] = [
        f"# EvoMoE vs Switch / GShard / Hash / BASE / dense on WikiText-2 (small GPT, {'GPU' if hw.get('gpu') else 'CPU'})",
        model_table(records, [agg_column("valid PPL (mean ± std) [95% CI]", "valid_ppl", 1, ci=True),
                              agg_column("test PPL (mean ± std) [95% CI]", "test_ppl", 1, ci=True)],
                    [["bigram (Kneser-Ney counts of the same training tokens; replications/evomoe/ngram.py)",
                      f"{bigram['valid_ppl']:.1f}", f"{bigram['test_ppl']:.1f} (full train set: "
                                                    f"{bigram['test_ppl_full_train']:.1f})"]])]
    blocks += paired_blocks(records, "test_ppl", 1, "test PPL of the baseline")
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
    ref = next((e for e in read_paper_yaml(PAPER)["reported"] if e["dataset"] == CHARS and e["metric"] == "valid_loss"), None)
    extra = [[*char_floor_row(floor), f"{math.exp(floor):.2f}"]]
    if ref is not None:
        extra.append([f"nanoGPT, dense ({ref['kind']}: {ref['source']})", f"{ref['value']:.2f}", "-", "-", "-", "-", "1"])
    blocks: list[Any] = [
        CHAR_SECTION,
        model_table(records, [*char_columns(floor), mean_column("valid PPL", "valid_ppl")], extra,
                    note=f"{CHAR_VALIDATION} The dense arm is nanoGPT's CPU configuration (conf/dataset/tinyshakespeare.yaml).")]
    blocks += paired_blocks(records, "valid_loss", 4, "validation loss of the arm")
    rows = measures.speed_rows(records["evomoe"], records["switch"]) if {"evomoe", "switch"} <= set(records) else None
    if rows:
        blocks += ["### Steps to Switch's final validation loss, per seed (the v1 abstract's speed claim; measures.py)",
                   seed_speed_table(rows)]
    return blocks, {"bigram_valid_loss": floor, "steps_to_switch": rows,
                    "every_arm_below_floor": all(r["aggregate"]["valid_loss"]["mean"] < floor for r in records.values())}


def build(results: PaperResults) -> PaperReport | None:
    """The page from the WikiText-2 and Tiny Shakespeare records (None without any); the claims come first."""
    parts = {d: ordered(results, d, ORDER) for d in (DATASET, CHARS)}
    if not any(parts.values()):
        return None
    claims = paper_claims(PAPER, results)
    blocks, data = wikitext_part(parts[DATASET]) if parts[DATASET] else ([], {})
    if parts[CHARS]:
        more, data[CHARS] = char_part(parts[CHARS])
        blocks += more
    return PaperReport(blocks=blocks, claims=claims, data=data)
