"""EvoMoE's claims on character-level Tiny Shakespeare: when they can be judged, the scale they are judged at, and
the speed claim (report.py builds both Claims; the outperform claim is report.outperform_claim on validation loss).

Judged only when every run of every arm ends 0.3 nats/char below the character bigram floor (the MoE layer's
charfloor.py: the margin, its reason and the floor); otherwise `not testable here`, as on WikiText-2.

The v1 abstract's "reaches Switch's validation perplexity 2.0x faster", per seed: Switch's steps to its own final
validation-subset loss (its first curve point at or below it) divided by EvoMoE's steps to that same loss
(speedup.seed_rows; the curve's points are the resolution, every 100 steps in this protocol). A seed whose EvoMoE
run never reaches the target counts as Switch's steps / the run's last step, capped at 1: EvoMoE needs more steps
than the run has, so its true ratio is below that bound, and the bound can only favour the claim. The mean is taken
on log ratios with a 95% Student-t interval (the geometric mean ratio and its interval, exponentiated back);
supported when the whole interval lies above 1 (faster), contradicted when it lies at or below 1.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch
from omegaconf import OmegaConf

from replications.evomoe import REPLICATION, charbench, speedup
from replications.moe import charfloor
from replications.moe.corpora import CHAR_CLAIM_SUFFIX
from shared.data.tinyshakespeare import EXPECTED
from shared.paper_report import Claim, Table
from shared.stats import summarize
from shared.verdict import NOT_RUN, NOT_TESTABLE, direction_status

DATASET = "tinyshakespeare"
ON = CHAR_CLAIM_SUFFIX  # the claims' text suffix: the first screen keeps a short parenthesis
PAPER_SCALE = "GPT-MoE 1.5B on OpenWebText"
UNIT = "x (Switch's steps / EvoMoE's to Switch's final validation loss, geometric mean over seeds)"


def untestable(records: dict[str, dict[str, Any]], floor: float | None) -> str | None:
    """Why the claims cannot be judged on these records (None: every run of every arm ends charfloor.MARGIN_NATS
    nats/char below the bigram's validation loss ``floor``)."""
    return charfloor.untestable(records, floor, f"so the comparison says nothing about {PAPER_SCALE}")


def parameters(record: dict[str, Any]) -> tuple[int, int]:
    """(all parameters, those one token uses) of the record's model, built on the CPU from the record's own config
    (the 65-character vocabulary); charbench.active_parameters counts one expert per MoE layer for the top-1 arms
    (EvoMoE once its dense phase is over) and two half-width ones for GShard."""
    cfg = OmegaConf.create(record["config"])
    with torch.random.fork_rng(devices=[]):  # the init draws numbers: leave the caller's generator as it was
        model = REPLICATION.build_model(SimpleNamespace(cfg=cfg, device="cpu"),
                                        SimpleNamespace(vocab=range(EXPECTED["vocab"])))
    return charbench.active_parameters(model, cfg)


def _count(n: int) -> str:
    return f"{n / 1e6:.2f}M" if n >= 100_000 else f"{n:,}"


def _values(values: set[int]) -> str:
    return "/".join(f"{v:,}" for v in sorted(values))


def scale(records: dict[str, dict[str, Any]]) -> str:
    """The scale the verdicts hold at, in words: model, parameters per arm, characters and steps per run, seeds."""
    p = next(iter(records.values()))["config"]["paper"]["protocol"]
    runs = [run for r in records.values() for run in r["runs"]]
    steps = {run["train"]["steps"] for run in runs}
    chars = {run["train"]["train_tokens"] for run in runs}
    params = ", ".join(f"{name} {_count(a)} / {_count(t)}"
                       for name, (t, a) in ((n, parameters(r)) for n, r in records.items()))
    seeds = sorted({len(r["runs"]) for r in records.values()})
    return (f"at this scale: character-level Tiny Shakespeare, a {p['layers']}-layer d{p['d_model']} GPT "
            f"({p['heads']} heads, block {p['seq_len']}; every FFN an MoE layer in the MoE arms), parameters active "
            f"per token / total: {params} (EvoMoE's dense phase runs every expert); {_values(steps)} steps of "
            f"{p['batch_size']} x {p['seq_len']} characters = {_values(chars)} training characters per run; "
            f"seeds per arm: {'/'.join(map(str, seeds))}")


def speed(records: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """Per seed: the target (Switch's final curve loss), Switch's and EvoMoE's steps to it and the ratio counted
    (see the module's docstring); then the geometric mean ratio, its 95% interval and the direction status.
    None without EvoMoE and Switch records."""
    if "evomoe" not in records or "switch" not in records:
        return None
    rows = speedup.seed_rows(records["evomoe"], records["switch"])
    for r in rows:
        r["target_valid_loss"] = math.log(r["target_valid_ppl_subset"])
        reached = r["model_steps"] is not None
        r["ratio"] = r["reference_steps"] / r["model_steps"] if reached else min(
            1.0, r["reference_steps"] / r["model_last_step"])
        r["reached"] = reached
    logs = summarize([math.log(r["ratio"]) for r in rows])
    steps = speedup.curve(records["switch"]["runs"][0])[0]
    out = {"rows": rows, "n": logs["n"], "resolution_steps": int(np.diff(steps).max()) if len(steps) > 1 else None,
           "geometric_mean": math.exp(logs["mean"]), "ci95": None, "status": direction_status(
               logs["ci95_low"], logs["ci95_high"])}
    if logs["n"] > 1:
        out["ci95"] = [math.exp(logs["ci95_low"]), math.exp(logs["ci95_high"])]
    return out


def _seed_words(r: dict[str, Any]) -> str:
    if r["reached"]:
        return f"{r['seed']}: {r['reference_steps']}/{r['model_steps']} = {r['ratio']:.2f}x"
    return (f"{r['seed']}: not reached by step {r['model_last_step']}, counted as {r['ratio']:.2f}x (an upper bound, "
            f"at most 1)")


def _against_paper(s: dict[str, Any], paper: float) -> str:
    if s["ci95"] is None:
        return f"one seed: no interval to set beside the paper's {paper:g}x"
    lo, hi = s["ci95"]
    where = "above" if paper > hi else "below" if paper < lo else "inside"
    return f"the paper's {paper:g}x lies {where} this interval"


def speed_claim(entry: dict[str, Any], records: dict[str, dict[str, Any]], reason: str | None, where: str) -> Claim:
    """The v1 abstract's speed claim judged on this protocol (``reason``: why it cannot be, from ``untestable``)."""
    base = {"text": entry["text"] + ON, "source": entry["source"], "verified": entry["verified"],
            "kind": entry["kind"]}
    s = speed(records)
    if s is None:
        return Claim(**base, status=NOT_RUN, evidence="no EvoMoE and Switch records on Tiny Shakespeare")
    paper = entry["values"]["speedup_to_switch_valid_ppl"]
    interval = "" if s["ci95"] is None else f" [{s['ci95'][0]:.2f}x, {s['ci95'][1]:.2f}x]"
    evidence = (f"Switch's steps to its own final validation-subset loss / EvoMoE's steps to that loss, per seed "
                f"(first curve point at or below it, every {s['resolution_steps']} steps): "
                + "; ".join(_seed_words(r) for r in s["rows"])
                + f"; geometric mean {s['geometric_mean']:.2f}x{interval} (95% t-interval on log ratios, n={s['n']}) "
                f"against the paper's {paper:g}x at {PAPER_SCALE}, a far larger scale ({_against_paper(s, paper)}); "
                f"the 1.42x FLOPs-efficiency is not measured here")
    effect = {"effect": s["geometric_mean"], "unit": UNIT,
              "interval": None if s["ci95"] is None else tuple(s["ci95"])}
    if reason is not None:
        return Claim(**base, status=NOT_TESTABLE, evidence=f"{evidence}; {reason}", scale=where, **effect)
    return Claim(**base, status=s["status"], evidence=evidence, scale=where, **effect)


def speed_table(s: dict[str, Any]) -> Table:
    rows = [[r["seed"], f"{r['target_valid_loss']:.4f}", r["reference_steps"],
             r["model_steps"] if r["reached"] else f"not reached by {r['model_last_step']}",
             f"{r['ratio']:.2f}x" + ("" if r["reached"] else " (bound)")] for r in s["rows"]]
    interval = "-" if s["ci95"] is None else f"[{s['ci95'][0]:.2f}x, {s['ci95'][1]:.2f}x]"
    rows.append(["geometric mean (95% t-interval on log ratios)", "-", "-", "-",
                 f"{s['geometric_mean']:.2f}x {interval}: {s['status']}"])
    return Table(["seed", "target: Switch's final validation-subset loss (nats/char)", "Switch's steps to it",
                  "EvoMoE's steps to it", "Switch's steps / EvoMoE's"], rows,
                 note=f"Steps are the first curve point (every {s['resolution_steps']} steps) at or below the target. "
                      "A seed where EvoMoE never reaches it counts as Switch's steps / the run's last step, at most 1 "
                      "(an upper bound on its true ratio). Equal steps cost different FLOPs: EvoMoE's dense phase "
                      "runs every expert.")
