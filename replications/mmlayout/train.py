"""Fine-tuning and prediction: AdamW with two learning rates (the pretrained encoder, and the parts trained from
scratch), linear warm-up then linear decay, cross-entropy on each word's first sub-token."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import torch
from torch import nn

from replications.mmlayout.data import LABELS, Form
from replications.mmlayout.encode import IGNORE, Window, collate
from replications.mmlayout.metrics import COUNT_FIELDS, counts
from replications.mmlayout.model import Tagger
from shared.progress import bar

LogFn = Callable[[dict[str, float], int], None]


def autocast(device: str, precision: str):
    """bf16 autocast (fp32 master weights) where asked: on a CPU with AMX it runs the matmuls ~2x faster."""
    if precision not in ("fp32", "bf16"):
        raise ValueError(f"precision '{precision}' is not supported; valid: fp32, bf16")
    return torch.autocast(device.split(":")[0], dtype=torch.bfloat16, enabled=precision == "bf16")


def optimizer(model: Tagger, lr: float, new_lr: float, weight_decay: float) -> torch.optim.Optimizer:
    new = {id(p) for p in model.new_parameters()}
    groups: dict[tuple[bool, bool], list[nn.Parameter]] = {}
    for p in model.parameters():  # biases and LayerNorm weights (1-D) are not decayed, as in BERT fine-tuning
        groups.setdefault((id(p) in new, p.ndim < 2), []).append(p)
    return torch.optim.AdamW([{"params": ps, "lr": new_lr if is_new else lr, "weight_decay": 0.0 if nd else weight_decay}
                              for (is_new, nd), ps in groups.items()],
                             fused=True)  # one kernel for all tensors: 4x faster than the loop on one CPU core


def schedule(opt: torch.optim.Optimizer, total: int, warmup: int) -> torch.optim.lr_scheduler.LambdaLR:
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))

    return torch.optim.lr_scheduler.LambdaLR(opt, factor)


def batches(windows: list[Window], batch_size: int, generator: torch.Generator | None) -> list[list[Window]]:
    order = torch.randperm(len(windows), generator=generator).tolist() if generator is not None else range(len(windows))
    order = list(order)
    return [[windows[i] for i in order[k:k + batch_size]] for k in range(0, len(order), batch_size)]


def fit(model: Tagger, windows: list[Window], *, epochs: int, batch_size: int, lr: float, new_lr: float,
        weight_decay: float, warmup_frac: float, clip_norm: float, seed: int, device: str = "cpu",
        precision: str = "fp32", log: LogFn | None = None, curve_fn: Callable[[Tagger], dict[str, float]] | None = None) -> dict:
    """Train for a fixed number of epochs (no early stopping: FUNSD has no validation split). `curve_fn`, when
    given, is called after every epoch for the learning curve (recorded, never used to select anything)."""
    gen = torch.Generator().manual_seed(seed)
    steps_per_epoch = math.ceil(len(windows) / batch_size)
    total = epochs * steps_per_epoch
    opt = optimizer(model, lr, new_lr, weight_decay)
    sched = schedule(opt, total, max(1, round(warmup_frac * total)))
    loss_fn = nn.CrossEntropyLoss(ignore_index=IGNORE)
    curve, step, started = [], 0, time.perf_counter()
    train_seconds = 0.0
    for epoch in range(1, epochs + 1):
        model.train()
        t0, loss_sum, n = time.perf_counter(), 0.0, 0
        for batch in bar(batches(windows, batch_size, gen), desc=f"epoch {epoch}/{epochs}"):
            b = {k: v.to(device) for k, v in collate(batch).items()}
            with autocast(device, precision):
                logits = model(b["input_ids"], b["bbox"], b["attention_mask"], b["units"])
            loss = loss_fn(logits.float().reshape(-1, logits.shape[-1]), b["labels"].reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
            opt.step()
            sched.step()
            step += 1
            loss_sum, n = loss_sum + loss.item(), n + 1
        train_seconds += time.perf_counter() - t0
        point = {"epoch": epoch, "step": step, "train_loss": loss_sum / n, "train_seconds": round(train_seconds, 2)}
        if curve_fn is not None:
            point |= curve_fn(model)
        curve.append(point)
        if log is not None:
            log({k: float(v) for k, v in point.items() if k != "epoch"}, epoch)
    return {"epochs": epochs, "steps": step, "train_seconds": round(train_seconds, 2),
            "wall_seconds": round(time.perf_counter() - started, 2), "windows": len(windows), "curve": curve}


@torch.no_grad()
def predict(model: Tagger, windows: list[Window], forms: list[Form], batch_size: int = 8, device: str = "cpu",
            precision: str = "fp32") -> list[list[str]]:
    """Predicted BIO tag per word of every form (each word's first sub-token decides)."""
    model.eval()
    out = [["O"] * len(f.words) for f in forms]
    for batch in batches(windows, batch_size, None):
        b = collate(batch)
        with autocast(device, precision):
            logits = model(*(b[k].to(device) for k in ("input_ids", "bbox", "attention_mask", "units")))
        best = logits.argmax(-1).cpu()
        for i, w in enumerate(batch):
            seen = set()
            for pos, word in enumerate(w.word_index):
                if word >= 0 and word not in seen:
                    seen.add(word)
                    out[w.doc][word] = LABELS[int(best[i, pos])]
    return out


def per_doc_counts(forms: list[Form], predicted: list[list[str]]) -> list[list[int]]:
    """[tp, pred, gold] per form (metrics.COUNT_FIELDS)."""
    assert len(COUNT_FIELDS) == 3
    return [list(counts([LABELS[t] for t in f.tags], p)) for f, p in zip(forms, predicted)]
