"""FlexMoE's premise, measured: train the shared WikiText-2 GPT-MoE (replications/moe/lm.py, the protocol of
replications/moe/lmtrain.py) and record every step's expert loads -- the routing traces FlexMoE's scheduler
monitors.

A trace is, per optimiser step and MoE layer, the [source, expert] count of routed token-expert choices
(the gate's top-k, before any capacity drop: the load a placement must serve), with the step's tokens cut
into `trace_sources` equal consecutive chunks of the batch (whole sequences: the data-parallel ranks' batches
of a cluster of that many ranks), plus the kept counts (after the capacity rule) summed over sources.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig
from torch import Tensor

from replications.moe.lm import GPT
from replications.moe.lmtrain import fit_loop


class LoadRecorder:
    """Forward hooks on every MoE layer's gate: routed [sources, E] and kept [E] counts of the last call."""

    def __init__(self, model: GPT, sources: int):
        self.sources, self.routed, self.kept = sources, [], []
        self.handles = [layer.gate.register_forward_hook(self._hook) for layer in model.moe_layers()]
        self.num_experts = model.moe_layers()[0].num_experts

    def _hook(self, gate, inputs, routing) -> None:
        if not gate.training:  # evaluation passes (perplexity) are not part of the training trace
            return
        expert, keep = routing.expert.detach(), routing.keep.detach()
        T, E = expert.shape[0], self.num_experts
        if T % self.sources:
            raise ValueError(f"{T} tokens per step do not split into {self.sources} trace sources")
        src = torch.arange(T, device=expert.device).repeat_interleave(expert.shape[1]) // (T // self.sources)
        flat = src * E + expert.reshape(-1)
        self.routed.append(torch.bincount(flat, minlength=self.sources * E).view(self.sources, E).cpu())
        self.kept.append(torch.bincount(expert[keep], minlength=E).cpu())

    def take(self) -> tuple[np.ndarray, np.ndarray]:
        """This step's [layers, sources, E] routed and [layers, E] kept counts (and reset)."""
        routed, kept = torch.stack(self.routed).numpy(), torch.stack(self.kept).numpy()
        self.routed, self.kept = [], []
        return routed.astype(np.int16), kept.astype(np.int16)  # counts <= k * tokens per step

    def close(self) -> None:
        for h in self.handles:
            h.remove()


def fit(cfg: DictConfig, model: GPT, train: Tensor, valid: Tensor, log,
        seed: int = 0) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    """The shared LM loop (replications.moe.lmtrain.fit_loop), recording each step's loads. Returns the summary
    and the trace arrays routed [steps, layers, sources, E] and kept [steps, layers, E]. `seed` seeds the
    protocol's random batch windows (``batches: random``, Tiny Shakespeare); the sequential pass ignores it."""
    p = cfg.paper.protocol
    if p.batch_size % p.trace_sources:
        raise ValueError(f"batch_size {p.batch_size} must split into {p.trace_sources} trace sources "
                         "(whole sequences per source)")
    recorder = LoadRecorder(model, int(p.trace_sources))
    routed, kept = [], []

    def record(step: int, x: Tensor) -> None:
        r, k = recorder.take()
        routed.append(r)
        kept.append(k)

    def point(step: int) -> dict[str, Any]:
        return {"imbalance": float(imbalance(routed[-1].sum(1)[None]).mean())}

    try:
        summary = fit_loop(cfg, model, train, valid, log, after_step=record, curve_point=point, seed=seed)
    finally:
        recorder.close()
    return summary, np.stack(routed), np.stack(kept)


def imbalance(loads: np.ndarray) -> np.ndarray:
    """max / mean of expert loads over the last axis (1 = perfectly balanced; E = all on one expert)."""
    loads = np.asarray(loads, dtype=float)
    mean = loads.mean(-1)
    return np.divide(loads.max(-1), mean, out=np.full(mean.shape, np.nan), where=mean > 0)
