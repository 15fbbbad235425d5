"""TA-MoE's claims on character-level Tiny Shakespeare (report.py puts them beside WikiText-2's, which stay as
they are): "accuracy" (the TA loss costs no validation loss against the GShard loss) and "ladder" (its off-node
share is lower), each paired by seed with a 95% Student-t interval (report.paired).

Judged only when every run of both arms ends 0.3 nats/char below the character bigram floor (Kneser-Ney counts
of the train part as a validation loss; replications/moe/charfloor.py, the rule EvoMoE's claims use, with why):
short of it the arms have not gone far past character pairs and their difference says nothing about the loss at a
scale where models learn ("not testable here"). Each verdict names its scale: the arms' parameters (active per
token, all), the characters and steps each run trained on, the seeds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import torch
from omegaconf import OmegaConf

from replications.moe import charfloor
from replications.moe.corpora import CHAR_CLAIM_SUFFIX
from shared.paper_report import Claim, Table
from shared.verdict import INCONCLUSIVE, NOT_RUN, NOT_TESTABLE, direction_status

DATASET = "tinyshakespeare"
ON = CHAR_CLAIM_SUFFIX  # the claims' text suffix: one claim per dataset on the page
VOCAB = 65  # the protocol's characters (shared/data/tinyshakespeare.py EXPECTED)
# "No loss of accuracy" at most 2% of perplexity, the tolerance WikiText-2's claim uses (report.ACCURACY_MARGIN),
# in the loss's own unit: ln(1.02) = 0.0198 nats/char. Fixed before any Tiny Shakespeare record existed; it does
# not depend on the runs (nanoGPT reports this configuration's loss to two decimals, ~0.01 nats, so a smaller
# margin would be finer than the anchor itself is read).
ACCURACY_MARGIN_NATS = math.log(1.02)
Paired = Callable[[dict[str, Any], dict[str, Any], str], Any]  # report.paired: a - b per seed, or None


def parameters(record: dict[str, Any]) -> tuple[int, int]:
    """(all parameters, those one token uses) of the record's model, built on the CPU from its own config."""
    from replications.ta_moe import REPLICATION
    from replications.ta_moe.charbench import active_parameters

    cfg = OmegaConf.create(record["config"])
    with torch.random.fork_rng(devices=[]):  # the init draws numbers: leave the caller's generator as it was
        model = REPLICATION.build_model(SimpleNamespace(cfg=cfg, device="cpu"), SimpleNamespace(vocab=range(VOCAB)))
    return sum(p.numel() for p in model.parameters()), active_parameters(model, int(cfg.model.gate_options.k))[1]


def scale(records: dict[str, dict[str, Any]]) -> str:
    """The scale the verdicts hold at, in words."""
    p = next(iter(records.values()))["config"]["paper"]["protocol"]
    runs = [run for r in records.values() for run in r["runs"]]
    chars = "/".join(f"{n / 1e6:.3f}M" for n in sorted({run["train"]["train_tokens"] for run in runs}))
    steps = "/".join(str(n) for n in sorted({run["train"]["steps"] for run in runs}))
    params = ", ".join(f"{name} {a / 1e6:.2f}M active per token ({t / 1e6:.2f}M in all)"
                       for name, (t, a) in ((n, parameters(r)) for n, r in records.items()))
    seeds = "/".join(str(n) for n in sorted({len(r["runs"]) for r in records.values()}))
    return (f"at this scale: character-level Tiny Shakespeare, a {p['layers']}-layer d{p['d_model']} GPT-MoE "
            f"(every FFN 4 experts, top-2, one per rank of the emulated 2 x 2 cluster), {params}; {chars} training "
            f"characters in {steps} steps per run, {seeds} seeds (the paper: GPT-Medium MoE on openwebtext2, "
            "multi-node GPUs)")


def untestable(records: dict[str, dict[str, Any]], floor: float | None) -> str | None:
    """Why the claims cannot be judged (None: every run of both arms ends charfloor.MARGIN_NATS below the floor)."""
    return charfloor.untestable(records, floor, "so their difference says nothing at a scale where models learn")


def _difference(d: dict[str, Any], what: str, digits: int = 4) -> str:
    return (f"{what} TA - GShard = {d['mean']:.{digits}f} [{d['ci95'][0]:.{digits}f}, {d['ci95'][1]:.{digits}f}] "
            "(95% t, paired by seed)")


def claim_checks(paper_claims: list[dict[str, Any]], ta: dict[str, Any] | None, gs: dict[str, Any] | None,
                 paired: Paired, floor: float | None) -> tuple[list[Claim], dict[str, Any]]:
    """The accuracy and ladder Claims on this dataset (texts suffixed ON), and the numbers behind them."""
    by_id = {c["id"]: c for c in paper_claims}
    records = {name: r for name, r in (("ta_moe", ta), ("gshard", gs)) if r is not None}
    claims, details = [], {"bigram_valid_loss": floor, "accuracy_margin_nats": ACCURACY_MARGIN_NATS}
    why = untestable(records, floor) if len(records) == 2 else None
    at = scale(records) if records else ""
    details["scale"] = at
    for cid in ("accuracy", "ladder"):
        c = by_id[cid]
        base = {"text": c["text"] + ON, "kind": c["kind"], "source": c["source"], "verified": c["verified"],
                "scale": at}
        if len(records) < 2:
            claims.append(Claim(**base, status=NOT_RUN, evidence="no complete TA-MoE and GShard records on this dataset"))
            continue
        if why is not None:
            claims.append(Claim(**base, status=NOT_TESTABLE, evidence=why))
            continue
        metric = "valid_loss" if cid == "accuracy" else "off_node_fraction_last10pct"
        d = paired(ta, gs, metric)
        details[cid] = {"difference": d}
        if d is None:
            claims.append(Claim(**base, status=INCONCLUSIVE, evidence="fewer than 2 seeds common to both arms"))
        elif cid == "accuracy":
            status = direction_status(*d["ci95"], claimed="none", margin=ACCURACY_MARGIN_NATS)
            claims.append(Claim(**base, status=status, effect=d["mean"], interval=tuple(d["ci95"]),
                                unit="validation loss, nats/char, TA-MoE - GShard",
                                evidence=f"{_difference(d, 'final validation loss (nats/char)')}; margin "
                                         f"+{ACCURACY_MARGIN_NATS:.4f} nats/char (= 2% of perplexity, as on "
                                         f"WikiText-2); every run of both arms at least {charfloor.MARGIN_NATS:g} "
                                         f"below the bigram ({floor:.3f})"))
        else:
            claims.append(Claim(**base, status=direction_status(*d["ci95"], claimed="negative"), effect=d["mean"],
                                interval=tuple(d["ci95"]), unit="off-node share, TA-MoE - GShard",
                                evidence=_difference(d, "off-node share (last 10% of steps)", 3)))
    return claims, details


def _ci(a: dict[str, float], digits: int) -> str:
    return f"{a['mean']:.{digits}f} ± {a['std']:.{digits}f} [{a['ci95_low']:.{digits}f}, {a['ci95_high']:.{digits}f}]"


def table(records: dict[str, dict[str, Any]], floor: float | None) -> Table:
    header = ["model", "valid loss, nats/char (mean ± std) [95% CI]", "below the bigram floor by",
              "off-node share, last 10% of steps", "off-node share, all steps", "dropped", "train tokens/s", "seeds",
              "wall time"]
    rows = []
    for name, r in records.items():
        a = r["aggregate"]
        rows.append([name, _ci(a["valid_loss"], 3), "-" if floor is None else f"{floor - a['valid_loss']['mean']:.3f}",
                     _ci(a["off_node_fraction_last10pct"], 3), f"{a['off_node_fraction']['mean']:.3f}",
                     f"{a['dropped_fraction']['mean']:.3f}", f"{a['train_tokens_per_s']['mean']:.0f}",
                     a["valid_loss"]["n"], f"{r['wall_seconds'] / 60:.1f} min"])
    if floor is not None:
        rows.append(["bigram (Kneser-Ney counts of the train part; replications/moe/ngram.py)", f"{floor:.3f}", "0",
                     "-", "-", "-", "-", "-", "-"])
    return Table(header, rows, note="Validation = the last 10% of the text (nanoGPT's split; no test part). The "
                                    "records keep the mean dispatch of every 20 steps (paper.protocol.dispatch_window)"
                                    "; the last 10% of steps are the last 10 of them.")
