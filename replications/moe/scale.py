"""The scale an MoE paper's verdict was reached at, for a claim spec's ``judge.scale`` (shared.claims): the arm's
parameters (all, and those one token uses), steps and training tokens per run, dataset, seeds and hardware, read
from its record. One helper for EvoMoE, TA-MoE and FlexMoE (a paper package never imports another's): each paper
passes its own ``parameters(record) -> (total, active)``, since what a token uses differs by gate.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import torch
from omegaconf import OmegaConf

from replications.moe import corpora

# The vocabulary each corpus's models are built with (replications/moe/corpora.py; the counts are checked on the
# mirror by tests/test_evomoe_charclaims.py): a model is rebuilt from its record's config without loading the data.
VOCAB = {"tinyshakespeare": 65, "wikitext2": 33278}


def model_from_record(replication: Any, record: dict[str, Any]) -> torch.nn.Module:
    """The record's model, built on the CPU from its own config (untrained: only its shape is wanted)."""
    cfg = OmegaConf.create(record["config"])
    corpus = corpora.record_corpus(record)
    with torch.random.fork_rng(devices=[]):  # the init draws numbers: leave the caller's generator as it was
        return replication.build_model(SimpleNamespace(cfg=cfg, device="cpu"),
                                       SimpleNamespace(vocab=range(VOCAB[corpus])))


def _count(n: float) -> str:
    return f"{n / 1e6:.2f}M" if n >= 100_000 else f"{n:,.0f}"


def lm_scale(results: Any, dataset: str | None, arm: str,
             parameters: Callable[[dict[str, Any]], tuple[int, int]]) -> dict[str, Any]:
    """{active_params, params, steps, tokens, dataset, hardware, text} of ``arm``'s record on ``dataset`` (just the
    dataset when it has none): what shared.claims sets beside the claim's scale."""
    record = results.record(dataset, arm) if dataset else None
    if record is None:
        return {"dataset": dataset} if dataset else {}
    p = record["config"]["paper"]["protocol"]
    total, active = parameters(record)
    runs = record["runs"]
    steps = max(run["train"]["steps"] for run in runs)
    tokens = max(run["train"]["train_tokens"] for run in runs)
    hw = record.get("environment", {}).get("hardware", {})
    hardware = hw.get("gpu") or hw.get("cpu") or "unknown"
    text = (f"{arm}: a {p['layers']}-layer d{p['d_model']} GPT, {_count(active)} active / {_count(total)} params, "
            f"{steps:,} steps, {tokens:,} training tokens per run, {len(runs)} seeds, {dataset}, {hardware}")
    return {"active_params": active, "params": total, "steps": steps, "tokens": tokens, "dataset": dataset,
            "hardware": hardware, "text": text}
