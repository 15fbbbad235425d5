"""The MoE papers' WikiText-2 LM protocol: batching, learning-rate schedule, precision, perplexity and the one
training loop (``fit_loop``) EvoMoE, TA-MoE and FlexMoE all train with; each paper adds only its hooks (EvoMoE's
DTS schedule, TA-MoE's dispatch record, FlexMoE's load traces).

The character-level protocol (conf/dataset/tinyshakespeare.yaml: nanoGPT's CPU configuration) sets protocol keys
the WikiText-2 protocol leaves unset, each defaulting to WikiText-2's behaviour: ``batches: random`` (nanoGPT's
uniformly drawn windows instead of the sequential pass), ``lr_schedule: cosine`` with ``min_lr`` (instead of a
linear decay to 0), ``betas``, and ``decay: matrices`` (weight decay on matmul and embedding weights only).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import torch
from torch import Tensor

from replications.moe.lm import GPT
from shared import progress
from shared.config_check import ConfigError, given


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


def perplexity(model: GPT, stream: Tensor, seq_len: int, batch: int = 32, max_tokens: int | None = None,
               precision: str = "fp32") -> float:
    """exp(mean NLL) over consecutive, non-overlapping windows of seq_len+1 tokens (no carried context)."""
    return math.exp(mean_nll(model, stream, seq_len, batch, max_tokens, precision))


@torch.no_grad()
def mean_nll(model: GPT, stream: Tensor, seq_len: int, batch: int = 32, max_tokens: int | None = None,
             precision: str = "fp32") -> float:
    """Mean next-token NLL (nats) over `perplexity`'s windows: a character model's loss, as nanoGPT reports it."""
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
    return total / x.numel()


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


def cosine_lr_at(step: int, total: int, warmup: int, peak: float, floor: float) -> float:
    """nanoGPT's schedule (train.py get_lr, decay over all `total` steps): peak * (step+1) / (warmup+1) while
    warming up, then a half cosine from peak down to `floor` at step `total`."""
    if step < warmup:
        return peak * (step + 1) / (warmup + 1)
    ratio = min(1.0, (step - warmup) / max(1, total - warmup))
    return floor + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (peak - floor)


def step_lr(step: int, total: int, p) -> float:
    """The learning rate of `step` under the protocol block `p` (lr_schedule: linear, the default, or cosine)."""
    kind = p.get("lr_schedule", "linear")
    if kind == "linear":
        return lr_at(step, total, p.warmup_steps, p.lr)
    if kind == "cosine":
        return cosine_lr_at(step, total, p.warmup_steps, p.lr, p.min_lr)
    raise ValueError(f"unknown lr_schedule '{kind}'; valid: linear, cosine")


def param_groups(model: GPT, weight_decay: float, decay: str = "all") -> list[dict[str, Any]]:
    """AdamW groups. decay=all: one group, every parameter decayed (the WikiText-2 protocol). decay=matrices
    (nanoGPT's configure_optimizers): matmul and embedding weights decay, biases and LayerNorm gains do not; an MoE
    layer stacks its experts' parameters, so there a matrix has 3 dimensions and a per-expert bias 2."""
    if decay == "all":
        return [{"params": list(model.parameters()), "weight_decay": weight_decay}]
    if decay != "matrices":
        raise ValueError(f"unknown decay '{decay}'; valid: all, matrices")
    from replications.moe import MoELayer

    stacked = {id(p) for m in model.modules() if isinstance(m, MoELayer) for p in m.parameters(recurse=False)}
    yes, no = [], []
    for p in model.parameters():
        (yes if p.dim() >= (3 if id(p) in stacked else 2) else no).append(p)
    return [{"params": yes, "weight_decay": weight_decay}, {"params": no, "weight_decay": 0.0}]


def random_batch(data: Tensor, batch_size: int, seq_len: int, gen: torch.Generator) -> tuple[Tensor, Tensor]:
    """nanoGPT's get_batch: `batch_size` windows of the 1-D stream starting at uniform random offsets."""
    starts = torch.randint(len(data) - seq_len, (batch_size,), generator=gen)
    at = starts[:, None] + torch.arange(seq_len)
    return data[at], data[at + 1]


def train_step(model: GPT, optimizer: torch.optim.Optimizer, x: Tensor, y: Tensor, step: int, steps: int, p,
               aux_weight: float, precision_ctx=None) -> tuple[Tensor, Tensor]:
    """One optimiser step of the protocol: the step's learning rate (`step_lr`), loss = NLL + aux_weight * aux,
    backward, gradient clipping at p.clip_norm, step. `p` is the paper's protocol block (lr, warmup_steps,
    clip_norm); `precision_ctx` an `autocast(...)` context for the forward. Returns (nll, aux), not detached."""
    for group in optimizer.param_groups:
        group["lr"] = step_lr(step, steps, p)
    with precision_ctx if precision_ctx is not None else nullcontext():
        nll, aux = model(x, y)
    loss = nll + aux_weight * aux
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), p.clip_norm)
    optimizer.step()
    return nll, aux


def check_batch(p: Any, train: Tensor) -> None:
    """Refuse a batch the training stream cannot fill: cut into batch_size streams (batchify), each must hold one
    seq_len window and its next token, else every step would read nothing (a ZeroDivisionError at the end)."""
    if p.get("batches", "sequential") != "sequential":
        return  # random windows are drawn with replacement: any batch size reads real tokens
    largest = train.numel() // (p.seq_len + 1)
    if p.batch_size > largest:
        raise ConfigError(f"paper.protocol.batch_size={p.batch_size} is larger than the training set allows: "
                          f"{train.numel()} tokens make at most {largest} streams of seq_len+1={p.seq_len + 1} tokens; "
                          f"give paper.protocol.batch_size={largest} or less (or a smaller paper.protocol.seq_len)")


def fit_loop(cfg, model: GPT, train: Tensor, valid: Tensor, log, *, precision: str = "fp32",
             before_step: Callable[[int, torch.optim.Optimizer], None] | None = None,
             timed_after_step: Callable[[int], None] | None = None,
             after_step: Callable[[int, Tensor], None] | None = None,
             curve_point: Callable[[int], dict[str, Any]] | None = None, seed: int = 0) -> dict[str, Any]:
    """The protocol's loop: AdamW(0.9, 0.98, eps 1e-8, the protocol's weight decay) over `steps` optimiser steps
    (scale.max_epochs caps them) of `train_step` on the batchified stream, a curve point every
    steps // curve_points steps (and at the last) with the validation-subset perplexity, logged without `step`.
    The protocol's ``betas``, ``decay`` and ``batches: random`` change the first three (random windows are drawn
    from torch.Generator(seed): every model of a seed reads the same windows).

    Hooks: ``before_step(step, optimizer)`` and ``timed_after_step(step)`` run inside the timed step (a paper's
    schedule or gate averaging is part of its step time); ``after_step(step, x)`` after it (recording);
    ``curve_point(step)`` adds the paper's values to a curve point, before its perplexity is measured.
    Returns steps, train tokens, seconds, tokens/s and the curve."""
    p, m = cfg.paper.protocol, cfg.model
    check_batch(p, train)  # EvoMoE, TA-MoE and FlexMoE alike: before the model is touched
    steps = int(given(cfg.scale.max_epochs, p.steps))
    device = next(model.parameters()).device
    batches = p.get("batches", "sequential")
    if batches not in ("sequential", "random"):
        raise ValueError(f"unknown batches '{batches}'; valid: sequential, random")
    # random windows are gathered on the CPU (the generator's device) and moved per step, as nanoGPT does
    data = batchify(train, p.batch_size).to(device) if batches == "sequential" else train
    gen = torch.Generator().manual_seed(seed)
    betas = tuple(p.get("betas") or (0.9, 0.98))
    optimizer = torch.optim.AdamW(param_groups(model, p.weight_decay, p.get("decay", "all")), lr=p.lr, betas=betas,
                                  eps=1e-8)
    curve: list[dict[str, Any]] = []
    tokens, seconds = 0, 0.0
    eval_every = max(1, steps // p.curve_points)
    pos = 0
    for step in progress.bar(range(steps), desc="train", unit="step"):
        t0 = time.perf_counter()
        if before_step is not None:
            before_step(step, optimizer)
        if batches == "sequential":
            x, y, pos = next_batch(data, pos, p.seq_len)
        else:
            x, y = random_batch(data, p.batch_size, p.seq_len, gen)
            x, y = x.to(device), y.to(device)
        nll, aux = train_step(model, optimizer, x, y, step, steps, p, m.aux_weight, autocast(device, precision))
        if timed_after_step is not None:
            timed_after_step(step)
        seconds += time.perf_counter() - t0
        tokens += x.numel()
        if after_step is not None:
            after_step(step, x)
        if step % eval_every == 0 or step == steps - 1:
            point = {"train_nll": float(nll.detach()), "aux": float(aux.detach()),
                     **(curve_point(step) if curve_point is not None else {})}
            point["valid_ppl_subset"] = perplexity(model, valid, p.seq_len, max_tokens=p.curve_valid_tokens,
                                                   precision=precision)
            curve.append({"step": step + 1, **point})
            log({k: v for k, v in point.items() if v is not None}, step + 1)
    return {"steps": steps, "train_tokens": tokens, "train_seconds": round(seconds, 2),
            "train_tokens_per_s": tokens / seconds, "curve": curve}
