"""TA-MoE's training protocol: the shared WikiText-2 LM protocol (replications/moe/lmtrain.py), every MoE
layer routed as if expert-parallel over W emulated ranks, and each step's dispatch matrix recorded.

One process trains the whole global batch; the gates read its rows as the W ranks' data-parallel batches
(B / W sequences each, rank order) and route each with its own rank's router, statistics and topology row
(the official run trains rank-local gates: --gate_reduce_freq 1000), so the
routing -- and the source-rank -> destination-rank token counts -- are those of W real ranks (the EP
invariance test checks the emulation against real gloo ranks). Multi-process training on 2 cores is too slow.
"""

from __future__ import annotations

import math
import time
from typing import Any

import torch
from omegaconf import DictConfig
from torch import Tensor

from replications.moe.lm import GPT
from replications.moe.lmtrain import batchify, next_batch, perplexity, train_step
from shared import progress
from shared.config_check import given


def fit(cfg: DictConfig, model: GPT, train: Tensor, valid: Tensor, log) -> dict[str, Any]:
    p, m = cfg.paper.protocol, cfg.model
    steps = int(given(cfg.scale.max_epochs, p.steps))  # scale.max_epochs caps the optimiser steps
    W = int(p.cluster.nodes) * int(p.cluster.ranks_per_node)
    if p.batch_size % W:
        raise ValueError(f"batch_size {p.batch_size} must split into {W} ranks' equal batches")
    data = batchify(train, p.batch_size)
    optimizer = torch.optim.AdamW(model.parameters(), lr=p.lr, betas=(0.9, 0.98), eps=1e-8,
                                  weight_decay=p.weight_decay)
    layers = model.moe_layers()
    dispatch: list[list[list[list[int]]]] = []  # [step][layer][source rank][destination rank]
    curve: list[dict[str, float]] = []
    tokens, seconds, dropped = 0, 0.0, 0.0
    eval_every = max(1, steps // p.curve_points)
    pos = 0
    for step in progress.bar(range(steps), desc="train", unit="step"):
        t0 = time.perf_counter()
        x, y, pos = next_batch(data, pos, p.seq_len)
        nll, aux = train_step(model, optimizer, x, y, step, steps, p, m.aux_weight)
        if p.gate_reduce_freq and (step + 1) % p.gate_reduce_freq == 0:  # official all_reduce_gate_parameters
            for layer in layers:
                layer.gate.average_routers()
        seconds += time.perf_counter() - t0
        tokens += x.numel()
        dispatch.append([layer.gate.last_dispatch.tolist() for layer in layers])
        dropped += sum(la.last_stats["dropped_fraction"] for la in layers) / len(layers)
        if step % eval_every == 0 or step == steps - 1:
            point = {"train_nll": float(nll.detach()), "aux": float(aux.detach()),
                     "off_node_fraction": off_node_fraction([dispatch[-1]], int(p.cluster.ranks_per_node)),
                     "valid_ppl_subset": perplexity(model, valid, p.seq_len, max_tokens=p.curve_valid_tokens)}
            curve.append({"step": step + 1, **point})
            log(point, step + 1)
    return {"steps": steps, "train_tokens": tokens, "train_seconds": round(seconds, 2),
            "train_tokens_per_s": tokens / seconds, "mean_dropped_fraction": dropped / steps,
            "curve": curve, "dispatch": dispatch}


def off_node_fraction(dispatch: list[list[list[list[int]]]], ranks_per_node: int) -> float:
    """Share of kept token-expert assignments whose expert sits on another node, over steps and layers."""
    off = total = 0
    for step in dispatch:
        for matrix in step:
            for i, row in enumerate(matrix):
                for j, n in enumerate(row):
                    total += n
                    off += n * (i // ranks_per_node != j // ranks_per_node)
    return off / total if total else math.nan


def mean_dispatch(dispatch: list[list[list[list[int]]]]) -> list[list[float]]:
    """[source][destination] mean kept assignments per step and layer."""
    t = torch.tensor(dispatch, dtype=torch.float64)  # [steps, layers, W, W]
    return t.mean(dim=(0, 1)).tolist()
