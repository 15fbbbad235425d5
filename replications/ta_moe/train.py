"""TA-MoE's training protocol: the shared WikiText-2 LM protocol (replications/moe/lmtrain.py), every MoE
layer routed as if expert-parallel over W emulated ranks, and each step's dispatch matrix recorded.

One process trains the whole global batch; the gates read its rows as the W ranks' data-parallel batches
(B / W sequences each, rank order) and route each with its own rank's router, statistics and topology row
(the official run trains rank-local gates: --gate_reduce_freq 1000), so the
routing -- and the source-rank -> destination-rank token counts -- are those of W real ranks (the EP
invariance test checks the emulation against real gloo ranks). Multi-process training on 2 cores is too slow.

The record keeps every step's matrices where the protocol is short (WikiText-2: 300 steps, the replay reads them)
and the mean over windows of steps where it is long (``paper.protocol.dispatch_window``, by dataset: Tiny
Shakespeare's 2000 steps x 4 layers would make a record of ~10 MB per arm).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from omegaconf import DictConfig
from torch import Tensor

from replications.moe import corpora
from replications.moe.lm import GPT
from replications.moe.lmtrain import fit_loop


def dispatch_window(cfg: DictConfig) -> int:
    """Steps per recorded dispatch entry for this run's corpus (1: every step's matrices, as counted)."""
    windows = cfg.paper.protocol.get("dispatch_window")
    dataset = corpora.corpus_of(cfg.dataset)
    if windows is None:
        return 1
    if dataset not in windows or int(windows[dataset]) < 1:
        raise ValueError(f"paper.protocol.dispatch_window has no positive window for dataset '{dataset}' "
                         f"(has: {dict(windows)}); add one, e.g. {dataset}: 1 to record every step")
    return int(windows[dataset])


def fit(cfg: DictConfig, model: GPT, train: Tensor, valid: Tensor, log, seed: int = 0) -> dict[str, Any]:
    """The shared LM loop (replications.moe.lmtrain.fit_loop), recording the dispatch matrices: every step's, or
    the mean of each `dispatch_window` steps (the last window may be shorter). `seed` draws the random windows of
    ``batches: random`` (every arm of a seed reads the same ones); the sequential pass ignores it."""
    p = cfg.paper.protocol
    W = int(p.cluster.nodes) * int(p.cluster.ranks_per_node)
    if p.batch_size % W:
        raise ValueError(f"batch_size {p.batch_size} must split into {W} ranks' equal batches")
    layers = model.moe_layers()
    window = dispatch_window(cfg)
    # [entry][layer][source rank][destination rank]: kept assignments of one step (window 1, ints) or their
    # mean per step over the entry's window (floats)
    dispatch: list[list[list[list[float]]]] = []
    pending: list[Tensor] = []  # this window's steps, [layers, W, W] each
    dropped = [0.0]

    def reduce_gates(step: int) -> None:
        if p.gate_reduce_freq and (step + 1) % p.gate_reduce_freq == 0:  # official all_reduce_gate_parameters
            for layer in layers:
                layer.gate.average_routers()

    def flush() -> None:
        dispatch.append((torch.stack(pending).double().mean(0)).tolist())
        pending.clear()

    def record(step: int, x: Tensor) -> None:
        dropped[0] += sum(la.last_stats["dropped_fraction"] for la in layers) / len(layers)
        if window == 1:
            dispatch.append([layer.gate.last_dispatch.tolist() for layer in layers])
            return
        pending.append(torch.stack([layer.gate.last_dispatch for layer in layers]))
        if len(pending) == window:
            flush()

    def point(step: int) -> dict[str, Any]:  # this step's matrices, whatever the record keeps
        now = [[layer.gate.last_dispatch.tolist() for layer in layers]]
        return {"off_node_fraction": off_node_fraction(now, int(p.cluster.ranks_per_node))}

    summary = fit_loop(cfg, model, train, valid, log, timed_after_step=reduce_gates, after_step=record,
                       curve_point=point, seed=seed)
    if pending:
        flush()
    return {**summary, "mean_dropped_fraction": dropped[0] / summary["steps"], "dispatch": dispatch,
            "dispatch_window": window}


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
