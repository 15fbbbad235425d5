"""TA-MoE's paper-specific parts of its claim specs (paper.yaml ``claims:``, judged by shared.claims): the replayed
all-to-all times (claim a2a) and the scale each verdict was reached at; for the page, the learnt dispatch pattern
(learnt_dispatch: the last 10% of steps, mean over seeds).

a2a: the replay (replay.py) timed every recorded dispatch of the last ``steps_per_seed`` steps of every seed
through the emulated 2-node testbed at two message widths (values per token). Per width, TA-MoE / GShard mean
all-to-all time with each arm bootstrapped on its own (the matrices are not paired across arms: shared.claims kind
``ratio``). The widest messages (bandwidth-bound) decide, unless any width contradicts the claim; narrow ones are
latency-bound on this testbed. Beside it, for reference, a model of the slowest node link's time (not measured).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from replications.moe.scale import lm_scale, model_from_record
from replications.ta_moe.train import mean_dispatch
from shared.claims import ClaimSpec
from shared.claims.kinds import ratio
from shared.report.paper_hook import PaperResults
from shared.verdict import CONTRADICTED

ARM = "ta_moe"  # the arm whose scale a verdict is reached at (GShard's model has the same shape)
LAST = 0.1  # the learnt pattern: the last 10% of training steps (the ladder claim's window)


def parameters(record: dict[str, Any]) -> tuple[int, int]:
    """(all parameters, those one token uses: k of the E experts and one rank-local router per MoE layer)."""
    from replications.ta_moe import REPLICATION
    from replications.ta_moe.charbench import active_parameters

    return active_parameters(model_from_record(REPLICATION, record), int(record["config"]["model"]["gate_options"].get("k", 2)))


def scale(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, Any]:
    return lm_scale(results, dataset, ARM, parameters)


def replay_scale(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, Any]:
    """The trained model's scale, on the replay's testbed (its hardware) where the replay ran."""
    out = scale(results, dataset, spec)
    replay = results.side_file("replay.json")
    if replay is not None:
        tb = replay["testbed"]
        out["hardware"] = (f"{tb['nodes']} nodes x {tb['ranks_per_node']} gloo ranks, inter-node links shaped to "
                           f"{tb['inter_rate_mbit']:.0f} Mbit/s")
        out["text"] = f"{out.get('text', dataset)}; its dispatch replayed on {out['hardware']}"
    return out


def modelled_link_ms(record: dict[str, Any], links: dict[str, float], width: int = 1024, steps: int = 50) -> float:
    """A model, not a measurement: mean over the last `steps` recorded dispatches (every seed, both layers) of
    the slowest node link's time, bytes over the link / the measured inter-node rate, for dispatch + combine
    with `width` fp32 values per token (each node's full-duplex NIC carries what its ranks send off-node)."""
    rpn = record["config"]["paper"]["protocol"]["cluster"]["ranks_per_node"]
    times = []
    for run in record["runs"]:
        for step in run["train"]["dispatch"][-steps:]:
            for m in step:
                m = np.array(m, dtype=float)
                node = np.arange(m.shape[0]) // rpn
                nodes = range(m.shape[0] // rpn)
                link = max([m[node == n][:, node != n].sum() for n in nodes] + [m[node != n][:, node == n].sum() for n in nodes])
                times.append(2 * link * width * 4 * 8 / (links["inter"] * 1e6))
    return 1e3 * float(np.mean(times))


def replay_a2a(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, Any] | str:
    """Kind ``measured``: the widest width's ratio decides (any contradicted width contradicts), each width's
    ratio and interval named in the evidence; a 'not run' reason without the replay's side file."""
    replay = results.side_file("replay.json")
    if replay is None:
        return "the replay (python -m replications.ta_moe.replay) has not run"
    arm, base = spec.arms
    seconds = {(r["arm"], r["d_model"]): r["seconds"] for r in replay["rows"]}
    widths = sorted(w for (a, w) in seconds if a == arm and (base, w) in seconds)
    if not widths:
        return f"replay.json has no width replayed for both {arm} and {base}: rerun python -m replications.ta_moe.replay"
    judge = {**spec.judge, "claimed": spec.judge.get("claimed", "negative")}
    per_width = {w: ratio(judge, {a: dict(enumerate(seconds[a, w])) for a in (arm, base)}) for w in widths}
    widest = per_width[widths[-1]]
    status = CONTRADICTED if any(o.status == CONTRADICTED for o in per_width.values()) else widest.status
    words = "; ".join(
        f"H={w}: {1e3 * np.mean(seconds[arm, w]):.2f} vs {1e3 * np.mean(seconds[base, w]):.2f} ms, "
        f"x{o.interval.effect:.2f} [{o.interval.low:.2f}, {o.interval.high:.2f}]: {o.status}" for w, o in per_width.items())
    evidence = f"{words}; the widest messages decide unless a width contradicts"
    links = results.side_file("links.json")
    if links is not None:
        modelled = {a: modelled_link_ms(r, links["measured_mbit"]) for a, r in results.models(dataset).items()}
        evidence += ("; modelled, not measured (slowest node link at the measured inter rate, H=1024): "
                     + ", ".join(f"{a} {v:.1f} ms" for a, v in modelled.items()))
    return {"status": status, "effect": widest.interval.effect, "low": widest.interval.low,
            "high": widest.interval.high, "n": widest.interval.n, "method": widest.interval.method,
            "unit": f"x ({arm} / {base} all-to-all time, H={widths[-1]})", "rule": widest.rule, "evidence": evidence}


def learnt_dispatch(record: dict[str, Any]) -> list[list[float]]:
    """Mean [source][destination] kept assignments per step and layer over the last 10% of steps, all seeds."""
    mats = []
    for run in record["runs"]:
        dispatch = run["train"]["dispatch"]
        mats.append(mean_dispatch(dispatch[-max(1, int(len(dispatch) * LAST)):]))
    return np.mean(np.array(mats), axis=0).tolist()
