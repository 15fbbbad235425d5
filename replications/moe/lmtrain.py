"""Batching, learning-rate schedule, precision and perplexity of the MoE papers' WikiText-2 LM protocol.

Moved from the EvoMoE package (its protocol, now shared: TA-MoE trains the same model the same way).
"""

from __future__ import annotations

import math
from contextlib import nullcontext

import torch
from torch import Tensor

from replications.moe.lm import GPT
from shared import progress


def autocast(device: torch.device, precision: str):
    """bf16 autocast (the GPU protocol) or full fp32 (the CPU protocol)."""
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    if precision != "fp32":
        raise ValueError(f"unknown precision '{precision}'; valid: fp32, bf16")
    return nullcontext()


def batchify(stream: Tensor, batch_size: int) -> Tensor:
    n = stream.numel() // batch_size
    return stream[: n * batch_size].view(batch_size, n)


@torch.no_grad()
def perplexity(model: GPT, stream: Tensor, seq_len: int, batch: int = 32, max_tokens: int | None = None,
               precision: str = "fp32") -> float:
    """exp(mean NLL) over consecutive, non-overlapping windows of seq_len+1 tokens (no carried context)."""
    model.eval()
    device = next(model.parameters()).device
    s = stream if max_tokens is None else stream[: max_tokens + 1]
    n_win = (s.numel() - 1) // seq_len
    x = s[: n_win * seq_len].view(n_win, seq_len)
    y = s[1: n_win * seq_len + 1].view(n_win, seq_len)
    total = 0.0
    for i in progress.bar(range(0, n_win, batch), desc="perplexity", unit="batch"):
        with autocast(device, precision):
            nll, _ = model(x[i:i + batch].to(device), y[i:i + batch].to(device))
        total += float(nll) * x[i:i + batch].numel()
    model.train()
    return math.exp(total / x.numel())


def next_batch(data: Tensor, pos: int, seq_len: int) -> tuple[Tensor, Tensor, int]:
    """Inputs, next-token targets and the next position of a sequential pass over batchified data (wraps
    to the start when the next window would run past the end)."""
    if pos + seq_len + 1 > data.shape[1]:
        pos = 0
    return data[:, pos:pos + seq_len], data[:, pos + 1:pos + seq_len + 1], pos + seq_len


def lr_at(step: int, total: int, warmup: int, peak: float) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    return peak * max(0.0, (total - step) / max(1, total - warmup))


def train_step(model: GPT, optimizer: torch.optim.Optimizer, x: Tensor, y: Tensor, step: int, steps: int, p,
               aux_weight: float, precision_ctx=None) -> tuple[Tensor, Tensor]:
    """One optimiser step of the protocol: the step's learning rate (`lr_at`), loss = NLL + aux_weight * aux,
    backward, gradient clipping at p.clip_norm, step. `p` is the paper's protocol block (lr, warmup_steps,
    clip_norm); `precision_ctx` an `autocast(...)` context for the forward. Returns (nll, aux), not detached."""
    for group in optimizer.param_groups:
        group["lr"] = lr_at(step, steps, p.warmup_steps, p.lr)
    with precision_ctx if precision_ctx is not None else nullcontext():
        nll, aux = model(x, y)
    loss = nll + aux_weight * aux
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), p.clip_norm)
    optimizer.step()
    return nll, aux
