"""MoESys's paper-specific judgements for its claim specs (paper.yaml ``claims:``, judged by shared.claims, kind
``measured``): what is shown is a mechanism, so each function returns the verdict's parts itself with the status
"mechanism shown", "contradicted" or "inconclusive" (shared.verdict), or why it was not run.

- ring memory: outputs bit-identical to the fully resident model, and the ring (k = 2, reads from storage) faster than
  load-then-compute in every one of >= 5 paired repeats (sign test p <= 1/32); effect: the median paired ratio,
  interval: the repeats' range.
- elastic training: a 2 -> 1 -> 2 run whose loss curve stays within ELASTIC_TOL of the uninterrupted one.
"""

from __future__ import annotations

import statistics
from typing import Any

import torch

from shared.claims import ClaimSpec
from shared.report.paper_hook import PaperResults
from shared.verdict import CONTRADICTED, INCONCLUSIVE, MECHANISM_SHOWN, SUPPORTED, sign_status

DATASET = "markov_tokens"
ELASTIC_TOL = 1e-4  # loss difference allowed for float summation order across world sizes
MIN_REPEATS = 5  # all of >= 5 paired repeats faster: sign test p <= 1/32


def paired_ratios(rows: list[dict[str, Any]]) -> list[float]:
    """Load-then-compute time / ring k=2 time from storage, per repeat of one setting: k = 1 and k = 2 ran next
    to each other in each repeat, so machine drift cancels."""
    by = {(r["storage"], r["k"]): r for r in rows}
    return [a / b for a, b in zip(by["storage", 1]["seconds_all"], by["storage", 2]["seconds_all"], strict=True)]


def _train(results: PaperResults, model: str) -> dict[str, Any] | str:
    """The full-scale record's training summary, or why the claim resting on it was not run."""
    record = results.record(DATASET, model)
    if record is None:
        return f"no results/moesys/{DATASET}/{model}.json: make replicate-moesys"
    if record.get("scale") != "full":
        return f"only a {record.get('scale')}-scale record of {model} (the protocol is `make replicate-moesys`)"
    return record["runs"][0]["train"]


def ring_memory(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, Any] | str:
    train = _train(results, "ring_memory")
    if isinstance(train, str):
        return train
    ratios = paired_ratios(train["settings"][0]["rows"])
    exact = results.record(DATASET, "ring_memory")["runs"][0]["metrics"]["test_exact_vs_resident"] == 1.0
    n, sign = len(ratios), sign_status([x - 1 for x in ratios])
    every = sign == SUPPORTED
    if not exact or sign == CONTRADICTED:
        status = CONTRADICTED
    else:
        status = MECHANISM_SHOWN if every and n >= MIN_REPEATS else INCONCLUSIVE
    evidence = (f"outputs {'bit-identical to' if exact else 'DIFFER from'} the resident model; ring k=2 faster than "
                f"load-then-compute (reads from storage, first setting) in {'every' if every else 'NOT every'} repeat"
                + (f" (sign test p = {0.5 ** n:.3f})" if every else ""))
    return {"status": status, "effect": statistics.median(ratios), "low": min(ratios), "high": max(ratios), "n": n,
            "method": "range", "unit": "x", "evidence": evidence,
            "rule": f"median of the paired ratios (load-then-compute / ring k=2); shown if exact and faster in all "
                    f">= {MIN_REPEATS} repeats"}


def elastic(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, Any] | str:
    train = _train(results, "elastic")
    if isinstance(train, str):
        return train
    diff, phases = train["max_abs_diff"], train["phases"]
    if phases != [2, 1, 2]:
        status = INCONCLUSIVE  # nobody left and rejoined: the scenario did not happen
    else:
        status = MECHANISM_SHOWN if diff < ELASTIC_TOL else CONTRADICTED
    return {"status": status, "effect": diff, "n": 1, "unit": "nats", "evidence": f"world sizes {' -> '.join(map(str, phases))}",
            "rule": f"max |loss - uninterrupted loss| over the steps; shown if a rank leaves and rejoins (2 -> 1 -> 2) "
                    f"and the curve stays within {ELASTIC_TOL:g}"}


def _params(vocab: int, m: dict[str, Any], sections: int, seq_len: int) -> int:
    """The MoEStack's parameters, counted on the meta device (shapes only)."""
    from replications.moesys.model import MoEStack

    with torch.device("meta"):
        model = MoEStack(vocab, m["d_model"], m["heads"], m["layers"], sections, m["ffn_hidden"], m["num_experts"],
                         seq_len, m.get("gate", "switch"), dict(m.get("gate_options") or {}))
    return sum(p.numel() for p in model.parameters())


def scale(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, Any]:
    """The model the claim's mechanism ran on: its parameters, the dataset and the CPU."""
    model = {"ring_memory": "ring_memory", "elastic_training": "elastic"}[spec.id]
    record = results.record(DATASET, model)
    if record is None:
        return {"dataset": DATASET}
    t = record["runs"][0]["train"]
    hw = record.get("environment", {}).get("hardware", {})
    hardware = f"{hw.get('gpu') or hw.get('cpu') or 'unknown'}, {hw.get('cpu_count', '?')} cores"
    p = t["params"]
    if model == "ring_memory":
        params = _params(p["vocab"], p, p["sections"], max(s for _, s in p["settings"]))
        steps = None
        text = (f"{p['layers']} blocks of top-1 MoE ({p['num_experts']} experts, d{p['d_model']}), {params / 1e6:.1f}M "
                f"params, streamed in {p['sections']} sections from a file; {hardware}")
    else:
        params = _params(p["data"]["vocab"], p["model"], 1, p["seq_len"])
        steps = p["steps"]
        text = (f"{p['model']['layers']} blocks of top-1 MoE ({p['model']['num_experts']} experts, d{p['model']['d_model']}),"
                f" {params / 1e3:.0f}k params, {p['steps']} steps on 2 -> 1 -> 2 ranks (gloo); {hardware}")
    out = {"params": params, "steps": steps, "dataset": DATASET, "hardware": hardware, "text": text}
    return {k: v for k, v in out.items() if v is not None}
