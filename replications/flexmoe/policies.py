"""Placement policies replayed on a trace (T [steps, W sources, E]), each returning per-step MODELLED seconds.

- static: one expert per rank, never changed (DeepSpeed-MoE's expert parallelism);
- fastermoe: FasterMoE's dynamic shadowing (official fmoe/transformer.py `_global_policy`, read, not copied),
  decided every step from that step's own counts (it runs after the gate): experts sorted by load, the most
  loaded shadowed one after another while the modelled latency improves (stop at the first increase), applied
  if better than no shadowing. The latency is our step model (stepmodel.py), not the official constants;
  the official loop's off-by-one (a loop that never breaks shadows all but the last improving expert) is not kept;
- flexmoe: RECONSTRUCTION of FlexMoE's scheduler (no official code; every constant is ours, from the config):
  every `interval` steps, from the mean counts of the last `interval` steps (its traffic monitor; the loads the
  plan then serves are the next steps', so fluctuation costs it), if the GPU-load max/mean exceeds `threshold`,
  up to `max_ops` greedy operations, each the best of
    replicate the hottest expert (largest load per replica) onto a rank with a free slot,
    shrink-and-replicate: on a full rank, drop a replica of an expert that has others, put the hot one there,
    shrink: drop one replica of an expert that has several,
    migrate: move an expert off the most loaded rank to a rank with a free slot,
  judged by modelled time saved over the next `interval` steps minus the parameter transfer it costs; it stops
  when no operation pays. Each rank has 1 + `extra_slots` expert slots;
- flexmoe_oracle (diagnostic, no system): the same heuristic planned on the very steps it serves (no lag);
  the gap to `flexmoe` is what fluctuation costs a scheduler that plans ahead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replications.flexmoe.stepmodel import Cluster, gpu_imbalance, step_seconds, transfer_seconds


@dataclass(frozen=True)
class FlexConfig:
    interval: int = 10
    extra_slots: int = 1
    max_ops: int = 8
    threshold: float = 1.05


def static_placement(E: int, W: int) -> np.ndarray:
    if E != W:
        raise ValueError(f"static placement here is one expert per rank: E ({E}) must equal W ({W})")
    return np.eye(E, dtype=bool)


def run_static(T: np.ndarray, c: Cluster) -> dict:
    R = static_placement(T.shape[2], c.W)
    return {"seconds": [step_seconds(t, R, c)["total"] for t in T]}


def fastermoe_shadow(t: np.ndarray, R: np.ndarray, c: Cluster) -> np.ndarray:
    """The shadowed experts for one step's counts t [W, E] (the official greedy structure)."""
    E = t.shape[1]
    none = np.zeros(E, dtype=bool)
    base = step_seconds(t, R, c, none)["total"]
    best, best_set = np.inf, none
    shadow = none.copy()
    for e in np.argsort(-t.sum(0), kind="stable"):
        shadow[e] = True
        lat = step_seconds(t, R, c, shadow)["total"]
        if lat < best:
            best, best_set = lat, shadow.copy()
        elif lat > best:
            break
    return best_set if best < base else none


def run_fastermoe(T: np.ndarray, c: Cluster) -> dict:
    R = static_placement(T.shape[2], c.W)
    seconds, shadowed = [], []
    for t in T:
        s = fastermoe_shadow(t, R, c)
        seconds.append(step_seconds(t, R, c, s)["total"])
        shadowed.append(int(s.sum()))
    return {"seconds": seconds, "mean_shadowed": float(np.mean(shadowed))}


def _candidates(R: np.ndarray, load: np.ndarray, slots: int, L_gpu: np.ndarray):
    """(kind, new R, rank that receives a parameter copy or None, source rank) for each operation."""
    n = R.sum(1)
    hot = int(np.argmax(load / n))
    free = R.sum(0) < slots
    for g in np.flatnonzero(~R[hot]):
        src = int(np.flatnonzero(R[hot])[0])
        if free[g]:
            new = R.copy()
            new[hot, g] = True
            yield "replicate", new, int(g), src
        for e in np.flatnonzero(R[:, g] & (n > 1)):
            if e != hot:
                new = R.copy()
                new[e, g], new[hot, g] = False, True
                yield "shrink_replicate", new, int(g), src
    for e in np.flatnonzero(n > 1):
        for g in np.flatnonzero(R[e]):
            new = R.copy()
            new[e, g] = False
            yield "shrink", new, None, None
    gmax = int(np.argmax(L_gpu))
    for e in np.flatnonzero(R[:, gmax]):
        for g in np.flatnonzero(free & ~R[e]):
            new = R.copy()
            new[e, gmax], new[e, g] = False, True
            if new[:, gmax].any():
                yield "migrate", new, int(g), gmax


def plan(R: np.ndarray, window: np.ndarray, c: Cluster, cfg: FlexConfig) -> tuple[np.ndarray, float, list[str]]:
    """Greedy operations on placement R for the window's mean counts [W, E]; returns (R, transfer seconds, ops)."""
    if gpu_imbalance(window, R) <= cfg.threshold:
        return R, 0.0, []
    slots = 1 + cfg.extra_slots
    node = c.node()
    cost, ops = 0.0, []
    cur = step_seconds(window, R, c)["total"]
    for _ in range(cfg.max_ops):
        L_gpu = (window @ (R / R.sum(1, keepdims=True))).sum(0)  # per-rank load
        best = None
        for kind, new, dst, src in _candidates(R, window.sum(0), slots, L_gpu):
            t = step_seconds(window, new, c)["total"]
            move = 0.0 if dst is None else transfer_seconds(c, bool(node[dst] != node[src]))
            gain = (cur - t) * cfg.interval - move
            if best is None or gain > best[0]:
                best = (gain, kind, new, t, move)
        if best is None or best[0] <= 0:
            break
        _, kind, R, cur, move = best
        cost += move
        ops.append(kind)
    return R, cost, ops


def run_flexmoe(T: np.ndarray, c: Cluster, cfg: FlexConfig, oracle: bool = False) -> dict:
    """oracle=False: plan at step k * interval from steps [k-1, k) * interval; oracle=True: from [k, k+1)."""
    R = static_placement(T.shape[2], c.W)
    seconds, ops, replicas = [], [], []
    for start in range(0, T.shape[0], cfg.interval):
        block = T[start:start + cfg.interval]
        seen = block if oracle else (T[start - cfg.interval:start] if start else None)
        move = 0.0
        if seen is not None:
            R, move, done = plan(R, seen.mean(0), c, cfg)
            ops += done
        for i, t in enumerate(block):
            seconds.append(step_seconds(t, R, c)["total"] + (move if i == 0 else 0.0))
            replicas.append(int(R.sum()))
    kinds = {k: ops.count(k) for k in ("replicate", "shrink_replicate", "shrink", "migrate")}
    return {"seconds": seconds, "ops": kinds, "mean_replicas": float(np.mean(replicas))}


def run_ideal(T: np.ndarray, c: Cluster) -> dict:
    """Reference, not a policy: every step's assignments spread perfectly evenly (uniform M), no sync cost."""
    out = []
    for t in T:
        flat = np.full((c.W, c.W), t.sum() / c.W**2)
        out.append(step_seconds(flat, np.eye(c.W, dtype=bool), c)["total"])
    return {"seconds": out}
