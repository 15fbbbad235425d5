"""Training protocol shared by every model of the comparison: same data order, steps and optimiser.

Batches: the train stream cut into `batch_size` contiguous streams, read `seq_len` tokens at a time
(word_language_model's batchify); the stream order is the same for every model and seed, only the
initialisation and Gumbel noise differ by seed. Optimiser: Adam(0.9, 0.98), eps 1e-8, weight decay 0.1,
clip-norm 5.0 (official EvoMoE README command); linear warm-up then linear ("polynomial_decay", power 1)
decay to 0 (fairseq's default power).
EvoMoE: `diversify_steps` with one dense expert (DTS gate in mode "single"), then every expert is a copy
of it plus multiplicative noise (our choice; the paper's procedure is unknown), then the DTS gate with the
temperature schedule; after `hard_after` steps of that, the hard (top-1) Gumbel gate.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from omegaconf import DictConfig
from torch import Tensor

from replications.moe.gates import DTSGate
from replications.moe.lm import GPT
from replications.moe.lmtrain import check_batch, fit_loop
from replications.moe.schedule import temperature
from shared.config_check import given


def diversify(model: GPT, optimizer: torch.optim.Optimizer, noise: float, gen: torch.Generator) -> None:
    """Expert 0 (trained alone) -> all experts: copies times (1 + noise * N(0,1)); Adam state copied too."""
    with torch.no_grad():
        for layer in model.moe_layers():
            for p in (layer.w1, layer.b1, layer.w2, layer.b2):
                p[1:] = p[:1] * (1 + noise * torch.randn(p[1:].shape, generator=gen).to(p.device))
                for v in optimizer.state.get(p, {}).values():
                    if torch.is_tensor(v) and v.shape == p.shape:
                        v[1:] = v[:1]


def dts_gates(model: GPT) -> list[DTSGate]:
    return [m.gate for m in model.moe_layers() if isinstance(m.gate, DTSGate)]


def fit(cfg: DictConfig, model: GPT, train: Tensor, valid: Tensor, seed: int, log) -> dict[str, Any]:
    """The shared LM loop (replications.moe.lmtrain.fit_loop) with EvoMoE's DTS schedule as its step hook."""
    p, m = cfg.paper.protocol, cfg.model
    check_batch(p, train)  # before the DTS gates are read off the model (fit_loop checks again, for every MoE paper)
    # scale.max_epochs caps the optimiser steps (given: 0 is a value, refused by the config check, never "unset")
    steps = int(given(cfg.scale.max_epochs, p.steps))
    precision, target = p.get("precision", "fp32"), p.get("target_valid_ppl")
    evo = m.get("evomoe")
    diversify_steps = round(evo.diversify_frac * steps) if evo else 0
    if evo:
        decay_steps, hard_after = max(1, round(evo.decay_frac * steps)), round(evo.hard_after_frac * steps)
    gates = dts_gates(model)
    gen = torch.Generator().manual_seed(seed)
    for g in gates:
        g.generator = gen
        g.mode = "single" if evo and diversify_steps > 0 else "soft"
    counted = {"tokens": 0, "expert_tokens": 0.0}

    def schedule(step: int, optimizer: torch.optim.Optimizer) -> None:
        if not evo:
            return
        sparse_step = step - diversify_steps
        if sparse_step == 0 and diversify_steps > 0:
            diversify(model, optimizer, evo.noise, gen)
        for g in gates:
            if sparse_step >= 0:
                g.mode = "hard" if sparse_step >= hard_after else "soft"
                g.temperature = temperature(sparse_step, evo.schedule, evo.t_max, evo.t_min, decay_steps)

    def active_experts() -> float:
        layers = model.moe_layers()
        return sum(layer.last_stats["active_experts"] for layer in layers) / len(layers) if layers else 1.0

    def count(step: int, x: Tensor) -> None:
        counted["tokens"] += x.numel()
        counted["expert_tokens"] += x.numel() * active_experts()

    def point(step: int) -> dict[str, Any]:
        layers = model.moe_layers()
        out = {"active_experts": active_experts(),
               "temperature": gates[0].temperature if gates and evo and step >= diversify_steps else None}
        if layers:  # this training step's, measured before the curve point's perplexity passes
            out["dropped_fraction"] = sum(la.last_stats["dropped_fraction"] for la in layers) / len(layers)
        return out

    summary = fit_loop(cfg, model, train, valid, log, precision=precision, before_step=schedule, after_step=count,
                       curve_point=point, seed=seed)
    # first curve point at or below target_valid_ppl (GPU protocol)
    reached = [c["step"] for c in summary["curve"] if target is not None and c["valid_ppl_subset"] <= target]
    return {**summary, "mean_active_experts": counted["expert_tokens"] / counted["tokens"],
            "steps_to_target": float(reached[0]) if reached else math.nan}
