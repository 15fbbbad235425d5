"""FlexMoE's paper-specific parts of its claim specs (paper.yaml ``claims:``, judged by shared.claims): the premise
statistics over a window of training read from the routing traces, the testbed's replicated-vs-static all-to-all
(replica_a2a.json), and the scale each verdict was reached at; for the page, the simulator's policies per (model,
link) averaged over seeds (simulation_summary, from simulation.json).

The premise (imbalance, fluctuation) is a two-threshold band over the (gate, E) settings' seed means, which
shared.claims's ``threshold`` kind (one threshold) cannot say: supported when every setting lies above
``judge.threshold``, contradicted when every one lies at or below ``judge.options.contradicted_at``, else
inconclusive; effect = the smallest setting (it decides), interval = the range over settings (over seeds with one).
``judge.window: [a, b]`` is the part of each run judged, as fractions of its optimiser steps (steps a*T .. b*T).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats as sstats

from replications.flexmoe import stats
from replications.moe import corpora
from replications.moe.lm import GPT
from shared.claims import ClaimSpec
from shared.report.paper_hook import PaperResults
from shared.stats import percentile_interval, resample_indices
from shared.verdict import CONTRADICTED, INCONCLUSIVE, NOT_RUN, SUPPORTED, direction_status

NAMES = {"wikitext2": "WikiText-2", "tinyshakespeare": "Tiny Shakespeare"}
UNITS = {"wikitext2": "tokens", "tinyshakespeare": "characters"}
BOOTSTRAP = 2000  # replicates of the testbed's ratio of medians


def records(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, dict[str, Any]]:
    """The spec's arms (settings) that have a record on ``dataset``, in the spec's order."""
    found = results.models(dataset) if dataset else {}
    return {arm: found[arm] for arm in spec.arms if arm in found}


def run_statistic(loads: np.ndarray, what: str, window: int, lo: int, hi: int) -> float:
    """One layer's statistic over steps lo..hi-1 of its [steps, E] loads: 'imbalance' = mean per-step max/mean load;
    'fluctuation' = mean TV distance between consecutive ``window``-step windows over its multinomial noise floor
    (replications/flexmoe/stats.py; over all steps these are the records' imbalance_mean and tv_over_noise)."""
    loads = np.asarray(loads[lo:hi], dtype=float)
    if what == "imbalance":
        return float((loads.max(-1) / loads.mean(-1)).mean())
    w = stats.windows(loads, window)
    return float(stats.tv_distance(w[:-1], w[1:]).mean() / stats.noise_floor(w, int(round(loads.sum(-1).mean() * window))))


def seed_values(results: PaperResults, record: dict[str, Any], what: str, span: list[float]) -> dict[int, float]:
    """{seed: the statistic over the span of its run, mean over the MoE layers} from the run's trace."""
    window = int(record["config"]["paper"]["protocol"]["window"])
    out = {}
    for run in record["runs"]:
        loads = np.load(results.folder / "traces" / run["train"]["trace"])["routed"].sum(2)  # [steps, layers, E]
        lo, hi = int(span[0] * len(loads)), int(span[1] * len(loads))
        out[run["seed"]] = float(np.mean([run_statistic(loads[:, i], what, window, lo, hi) for i in range(loads.shape[1])]))
    return out


def band_status(low: float, high: float, support: float, contra: float) -> str:
    """Supported when the lowest setting lies above ``support``, contradicted when the highest lies at or below
    ``contra``, else inconclusive (between the thresholds is undecided by design)."""
    if direction_status(low, high, margin=support) == SUPPORTED:
        return SUPPORTED
    return CONTRADICTED if direction_status(low, high, margin=contra) == CONTRADICTED else INCONCLUSIVE


def premise(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, Any] | str:
    """The ``measured`` parts of one premise claim on one dataset (module docstring)."""
    found = records(results, dataset, spec)
    if not found:
        return f"{NAMES.get(dataset, dataset)}: no complete records (make replicate-flexmoe dataset={dataset})"
    judge = spec.judge
    what, span = judge["options"]["statistic"], judge["window"]
    per_seed = {name: seed_values(results, r, what, span) for name, r in found.items()}
    means = {name: float(np.mean(list(v.values()))) for name, v in per_seed.items()}
    spread = list(means.values()) if len(means) > 1 else list(next(iter(per_seed.values())).values())
    support, contra = float(judge["threshold"]), float(judge["options"]["contradicted_at"])
    steps = max(run["train"]["steps"] for r in found.values() for run in r["runs"])
    over = "settings" if len(means) > 1 else f"seeds of {next(iter(means))}"
    return {"status": band_status(min(means.values()), max(means.values()), support, contra),
            "effect": min(means.values()), "low": min(spread), "high": max(spread), "n": len(spread), "method": "range",
            "rule": (f"smallest setting's seed mean, range over {over}; supported above {support:g} in every setting, "
                     f"contradicted at or below {contra:g} in every one; window: steps {int(span[0] * steps) + 1}-"
                     f"{int(span[1] * steps)} of {steps}"),
            "evidence": "per setting: " + ", ".join(f"{n} {v:.2f}" for n, v in means.items())}


def active_parameters(config: dict[str, Any]) -> tuple[int, int]:
    """(all, per token) non-embedding parameters of a record's GPT-MoE: its blocks and final LayerNorm, built from
    the record's config (replications/moe/lm.py); per token counts k of the E experts of each MoE layer."""
    p, m = config["paper"]["protocol"], config["model"]
    gpt = GPT(2, p["d_model"], p["heads"], p["layers"], p["seq_len"], m["ffn_hidden"], m["gate"], m["num_experts"],
              dict(m.get("gate_options") or {}), None, None, 0.0)
    total = sum(q.numel() for q in gpt.parameters()) - gpt.embed.weight.numel() - gpt.pos.weight.numel()
    expert = sum(q.numel() for layer in gpt.moe_layers() for q in layer.parameters(recurse=False))
    k = 2 if m["gate"] == "gshard" else 1
    return total, total - expert + expert * k // int(m["num_experts"])


def _span(values: list[float], digits: str) -> str:
    low, high = min(values), max(values)
    return f"{low:{digits}}" if f"{low:{digits}}" == f"{high:{digits}}" else f"{low:{digits}}-{high:{digits}}"


def scale(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, Any]:
    """The premise's scale on ``dataset``: layers, width, experts, non-embedding parameters per token and in all
    (over the settings), steps, tokens per seed, seeds and hardware, read from the records."""
    found = records(results, dataset, spec)
    if not found:
        return {"dataset": dataset} if dataset else {}
    first = next(iter(found.values()))
    p = first["config"]["paper"]["protocol"]
    sizes = [active_parameters(r["config"]) for r in found.values()]
    experts = sorted({int(r["config"]["model"]["num_experts"]) for r in found.values()})
    steps = first["runs"][0]["train"]["steps"]  # the steps run (scale.max_epochs caps the protocol's)
    tokens = steps * p["batch_size"] * p["seq_len"]
    hardware = (first.get("environment") or {}).get("hardware", {}).get("cpu", "unknown")
    corpus = corpora.record_corpus(first)  # a scale ladder's rung trains on its corpus at another model size
    text = (f"{NAMES[corpus]}, a {p['layers']}-layer d{p['d_model']} GPT-MoE with E = {'/'.join(map(str, experts))} "
            f"experts, {_span([a / 1e6 for _, a in sizes], '.2f')}M non-embedding parameters per token "
            f"({_span([t / 1e6 for t, _ in sizes], '.1f')}M in all), {steps} steps of {p['batch_size']} x {p['seq_len']} "
            f"{UNITS[corpus]} ({tokens / 1e6:.2f}M per seed), {len(first['runs'])} seed(s)")
    return {"active_params": max(a for _, a in sizes), "params": max(t for t, _ in sizes), "steps": steps,
            "tokens": tokens, "dataset": dataset, "hardware": hardware, "text": text}


def order(ms: dict[str, float], tie: float = 1e-3) -> str:
    """'a < b = c': the three systems fastest first, '=' within a relative `tie`."""
    names = sorted(("static", "fastermoe", "flexmoe"), key=lambda p: ms[p])
    out = names[0]
    for prev, cur in zip(names, names[1:]):
        out += (" = " if ms[cur] <= ms[prev] * (1 + tie) else " < ") + cur
    return out


def simulation_summary(sim: dict[str, Any] | None) -> dict[str, Any]:
    """Per (model, link): mean over seeds of each policy's modelled ms and the ratios between policies."""
    if sim is None:
        return {}
    out: dict[str, Any] = {}
    for row in sim["rows"]:
        key = f"{row['model']}@{row['link_mbit']}"
        out.setdefault(key, {"model": row["model"], "link": row["link_mbit"], "per_seed": []})
        out[key]["per_seed"].append(row["policies"])
    for entry in out.values():
        seeds = entry.pop("per_seed")
        entry["mean_ms"] = {p: float(np.mean([s[p]["mean_ms"] for s in seeds])) for p in seeds[0]}
        pairs = {"static_over_flexmoe": ("static", "flexmoe"), "fastermoe_over_flexmoe": ("fastermoe", "flexmoe"),
                 "static_over_fastermoe": ("static", "fastermoe"), "static_over_oracle": ("static", "flexmoe_oracle")}
        entry["ratios"] = {k: float(np.mean([s[a]["mean_ms"] / s[b]["mean_ms"] for s in seeds]))
                           for k, (a, b) in pairs.items()}
        entry["ops"] = {k: float(np.mean([s["flexmoe"]["ops"][k] for s in seeds])) for k in seeds[0]["flexmoe"]["ops"]}
        entry["mean_shadowed"] = float(np.mean([s["fastermoe"]["mean_shadowed"] for s in seeds]))
        entry["order"] = order(entry["mean_ms"])
    return out


def median_ratio(replicated: list[float], static: list[float], seed: int = 0) -> dict[str, Any]:
    """replicated / static median time over the trials: the ratio, its 95% percentile bootstrap interval (each
    placement resampled on its own), its status (the claim: below 1) and, for reference, the Mann-Whitney p."""
    x, y = np.asarray(replicated, dtype=float), np.asarray(static, dtype=float)
    rx = np.median(x[resample_indices(len(x), BOOTSTRAP, seed)], axis=1)
    ry = np.median(y[resample_indices(len(y), BOOTSTRAP, seed + 1)], axis=1)
    low, high = percentile_interval(rx / ry, 0.95)
    return {"ratio": float(np.median(x) / np.median(y)), "ratio_ci95": [low, high],
            "p_two_sided": float(sstats.mannwhitneyu(x, y, alternative="two-sided").pvalue),
            "status": direction_status(low - 1, high - 1, claimed="negative")}


def a2a_check(a2a: dict[str, Any] | None) -> dict[str, Any]:
    """The testbed's replicated-vs-static comparison per hot share (the most skewed share decides the claim)."""
    if a2a is None:
        return {"status": NOT_RUN, "why": "the testbed measurement (python -m replications.flexmoe.a2a_bench, "
                                          "root + ip netns) has not run"}
    by = {(r["placement"], r["hot_share"]): r for r in a2a["rows"]}
    per_share = {}
    for h in sorted({r["hot_share"] for r in a2a["rows"]}):
        s, r = by.get(("static", h)), by.get(("replicated", h))
        if s and r:
            per_share[h] = {"static_ms": s["median_ms"], "replicated_ms": r["median_ms"],
                            **median_ratio(r["seconds"], s["seconds"])}
            if ("replicated_same_node", h) in by:
                per_share[h]["same_node_ms"] = by["replicated_same_node", h]["median_ms"]
    return {"status": per_share[max(per_share)]["status"] if per_share else NOT_RUN, "per_share": per_share,
            "replica_allreduce_ms": {k: v["median_ms"] for k, v in a2a.get("replica_allreduce", {}).items()},
            "load_average": [a2a["load_average_before"][0], a2a["load_average_after"][0]]}


def replica_a2a(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, Any] | str:
    """The ``measured`` parts of the replication claim: the most skewed share's replicated / static median time."""
    a2a = a2a_check(results.side_file("replica_a2a.json"))
    if not a2a.get("per_share"):
        return a2a.get("why", "no comparable placements in replica_a2a.json")
    h = max(a2a["per_share"])
    v = a2a["per_share"][h]
    return {"status": v["status"], "effect": v["ratio"], "low": v["ratio_ci95"][0], "high": v["ratio_ci95"][1],
            "n": min(len(r["seconds"]) for r in results.side_file("replica_a2a.json")["rows"] if r["hot_share"] == h),
            "method": "bootstrap", "unit": f"x (replicated / static median all-to-all time, share {h:.2f})",
            "rule": "supported when the interval lies below 1, contradicted above",
            "evidence": (f"replicated {v['replicated_ms']:.1f} ms vs static {v['static_ms']:.1f} ms, Mann-Whitney "
                         f"p={v['p_two_sided']:.2g}; replica all-reduce "
                         + ", ".join(f"{x:.0f} ms" for x in a2a["replica_allreduce_ms"].values()))}


def testbed_scale(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, Any]:
    """The testbed the replication claim was measured on (replica_a2a.json)."""
    raw = results.side_file("replica_a2a.json")
    if raw is None:
        return {}
    tb = raw["testbed"]
    hardware = ((raw.get("environment") or {}).get("hardware") or {}).get("cpu", "CPU")
    return {"hardware": hardware, "dataset": "synthetic tokens",
            "text": (f"emulated testbed: {tb['nodes']} nodes x {tb['ranks_per_node']} gloo ranks, inter-node links "
                     f"{tb['inter_mbit']} Mbit/s, {tb['tokens_per_rank']} tokens per rank of d {tb['d_model']}, "
                     f"{tb['trials']} trials, {hardware}")}
