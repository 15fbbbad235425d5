"""Elastic expert-parallel training: the worker torchrun runs (``python -m torch.distributed.run ... -m
replications.moesys.elastic --workdir DIR --params JSON``), and the same loop in one process (``train``).

Each step reads the global batch of that step (data.MarkovTokens.batch: a function of seed and step) and
takes this rank's 1/W of its rows; the loss is the mean over the rank's tokens, gradients follow the MoE
layer's convention (sync_grads), and Adam updates. So the trajectory does not depend on W: after a rank
leaves or joins, training resumes from the last checkpoint on the new world size and continues the curve
an uninterrupted single-process run draws (up to float summation order).

Checkpoint (every `ckpt_every` steps, written atomically by rank 0): the full model and Adam state with
every expert gathered from the ranks that hold it, so any world size can resume it (each rank slices its
experts back out). The RNG is reseeded from (seed, step) before each step, so no RNG state is saved.
The log (rank 0 appends one JSON line per step: step, loss, world size, restart count, time) is what the
orchestrator (elastic_run.py) watches and what the curve is drawn from.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F

from replications.moe import sync_grads
from replications.moe.dist import all_gather_cat, world
from replications.moesys.data import MarkovTokens
from replications.moesys.model import MoEStack
from shared.atomic import atomic_path

CKPT, LOG = "checkpoint.pt", "log.jsonl"
NODE_ENV = "MOESYS_NODE"  # set by elastic_run for each agent: the worker writes worker_<node>.pid


def build(p: dict[str, Any]) -> tuple[MoEStack, torch.optim.Adam, MarkovTokens]:
    torch.manual_seed(p["seed"])  # every rank builds the same model; MoELayer keeps this rank's experts
    m = p["model"]
    model = MoEStack(p["data"]["vocab"], m["d_model"], m["heads"], m["layers"], 1, m["ffn_hidden"],
                     m["num_experts"], p["seq_len"], m.get("gate", "switch"), dict(m.get("gate_options") or {}))
    opt = torch.optim.Adam(model.parameters(), lr=m["lr"])
    data = MarkovTokens(p["data"]["vocab"], p["data"]["branching"], p["data"]["chain_seed"])
    return model, opt, data


def _expert(p: torch.nn.Parameter) -> bool:
    return getattr(p, "expert", False)


def full_state(model: MoEStack, opt: torch.optim.Adam, next_step: int) -> dict[str, Any]:
    """Model + Adam state with experts gathered over ranks (a collective: every rank calls it)."""
    params, moments = {}, {}
    for name, p in model.named_parameters():
        st = opt.state.get(p, {})
        tensors = {"param": p.detach(), "exp_avg": st.get("exp_avg"), "exp_avg_sq": st.get("exp_avg_sq")}
        tensors = {k: (torch.zeros_like(p) if v is None else v) for k, v in tensors.items()}
        if _expert(p):
            tensors = {k: all_gather_cat(v) for k, v in tensors.items()}
        params[name] = tensors.pop("param").clone()
        moments[name] = {k: v.clone() for k, v in tensors.items()}
    adam_step = next((float(s["step"]) for s in opt.state.values() if "step" in s), 0.0)
    return {"next_step": next_step, "params": params, "moments": moments, "adam_step": adam_step,
            "saved_by_world": world()[1]}


def save(workdir: Path, model: MoEStack, opt: torch.optim.Adam, next_step: int) -> None:
    state = full_state(model, opt, next_step)
    if world()[0] == 0:
        with atomic_path(workdir / CKPT) as tmp:
            torch.save(state, tmp)


def restore(workdir: Path, model: MoEStack, opt: torch.optim.Adam) -> tuple[int, int | None]:
    """(the step to start from, the world size that saved it); (0, None) without a checkpoint."""
    path = workdir / CKPT
    if not path.exists():
        return 0, None
    state = torch.load(path, weights_only=True)
    rank, _ = world()
    for name, p in model.named_parameters():
        full, mom = state["params"][name], state["moments"][name]
        if _expert(p):  # [E, ...] -> this rank's experts
            L = p.shape[0]
            sl = slice(rank * L, (rank + 1) * L)
            full, mom = full[sl], {k: v[sl] for k, v in mom.items()}
        if full.shape != p.shape:
            raise ValueError(f"checkpoint {path}: {name} is {tuple(full.shape)}, the model wants {tuple(p.shape)}")
        with torch.no_grad():
            p.copy_(full)
        if state["adam_step"] > 0:
            opt.state[p] = {"step": torch.tensor(state["adam_step"]), "exp_avg": mom["exp_avg"].clone(),
                            "exp_avg_sq": mom["exp_avg_sq"].clone()}
    return int(state["next_step"]), int(state["saved_by_world"])


def step_loss(model: MoEStack, data: MarkovTokens, p: dict[str, Any], step: int) -> tuple[torch.Tensor, torch.Tensor]:
    rank, W = world()
    rows = p["global_batch"]
    if rows % W:
        raise ValueError(f"global_batch {rows} is not divisible by the world size {W}")
    ids = data.batch(p["seed"], step, rows, p["seq_len"] + 1)[rank * rows // W:(rank + 1) * rows // W]
    logits, aux = model(ids[:, :-1])
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
    return ce, aux


def train(p: dict[str, Any], workdir: Path | None = None, on_step=None) -> list[dict[str, Any]]:
    """Run (or resume) training to p["steps"]; returns this process's log rows. workdir None: no
    checkpoints and no log file (the uninterrupted reference)."""
    model, opt, data = build(p)
    start, saved_by = restore(workdir, model, opt) if workdir else (0, None)
    rank, W = world()
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", 0))
    rows = []
    for step in range(start, p["steps"]):
        torch.manual_seed(p["seed"] * 1_000_003 + step)  # router jitter etc.: a function of the step
        ce, aux = step_loss(model, data, p, step)
        opt.zero_grad(set_to_none=True)
        (ce + p["model"]["aux_weight"] * aux).backward()
        sync_grads(model)
        opt.step()
        loss = ce.detach().clone()
        if W > 1:
            dist.all_reduce(loss)
        row = {"step": step, "loss": float(loss) / W, "world": W, "restart": restart, "resumed_from": start,
               "saved_by_world": saved_by, "time": time.time()}
        rows.append(row)
        if workdir and rank == 0:
            with open(workdir / LOG, "a") as f:
                f.write(json.dumps(row) + "\n")
        if workdir and ((step + 1) % p["ckpt_every"] == 0 or step + 1 == p["steps"]):
            save(workdir, model, opt, step + 1)
        if on_step:
            on_step(row)
        time.sleep(p.get("step_sleep", 0.0))
        hold = p.get("hold")
        if hold and W == hold["world"] and step == hold["step"]:
            _hold(hold["seconds"])
    return rows


def _hold(seconds: float) -> None:
    """Pacing for the leave/rejoin scenario: after step hold.step on hold.world ranks, wait (up to `seconds`)
    for the agent to restart this worker because a node is waiting to join; then carry on. It only fixes
    where the change happens, so a slow machine gives the same scenario; the trajectory is unaffected."""
    end = time.time() + seconds
    while time.time() < end:
        time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", required=True, type=Path)
    parser.add_argument("--params", required=True, help="JSON: seed, steps, global_batch, seq_len, ckpt_every, "
                                                          "step_sleep, model {...}, data {...}")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if os.environ.get(NODE_ENV):  # lets the orchestrator kill this node's worker with its agent
        (args.workdir / f"worker_{os.environ[NODE_ENV]}.pid").write_text(str(os.getpid()))
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    try:
        train(json.loads(args.params), args.workdir)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
