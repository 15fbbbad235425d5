"""FlexMoE's page as data (``build``): the tables, the claim checks and the figures.

Reads the wikitext2 records (the runner's, with each run's trace statistics), the traces beside them
(<paper folder>/traces/*.npz) and, where present, the side files the manual steps wrote: simulation.json
(simulate.py: MODELLED) and replica_a2a.json (a2a_bench.py: MEASURED on the testbed). The claim rules are
those of paper.yaml (`tested_as`); thresholds are ours and named there; every status comes from shared.verdict.
The premise (imbalance, fluctuation) is judged per dataset with the same rule: WikiText-2 (word level, the paper-like
protocol) and, where its records exist, character-level Tiny Shakespeare (nanoGPT's CPU protocol), each verdict
naming its scale; the simulator and the testbed read WikiText-2 only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import yaml
from scipy import stats as sstats

from replications.moe.corpora import CHAR_CLAIM_SUFFIX
from replications.moe.lm import GPT
from shared.paper_report import Claim, Figure, PaperReport, PaperResults, Table
from shared.stats import percentile_interval, resample_indices
from shared.verdict import CONTRADICTED, INCONCLUSIVE, NOT_RUN, NOT_TESTABLE, SUPPORTED, direction_status

DATASET = "wikitext2"  # the paper-like protocol: the simulator, the testbed and the page's first premise
PREMISE_DATASETS = {"wikitext2": "WikiText-2", "tinyshakespeare": "Tiny Shakespeare (character level)"}
UNITS = {"wikitext2": "tokens", "tinyshakespeare": "characters"}
SHORT = {"wikitext2": "WikiText-2", "tinyshakespeare": "Tiny Shakespeare"}  # in a verdict's scale
# a second dataset's claim text ends with its name (as EvoMoE's and TA-MoE's do); WikiText-2's text stays as it was
TEXT_SUFFIX = {"tinyshakespeare": CHAR_CLAIM_SUFFIX}
RUN_TS = "make replicate-flexmoe dataset=tinyshakespeare"  # conf/paper/flexmoe.yaml header
PAPER = Path(__file__).with_name("paper.yaml")
ORDER = ["switch_e8", "switch_e16", "gshard_e8", "gshard_e16"]
IMBALANCE_SUPPORT, IMBALANCE_CONTRA = 1.5, 1.1  # paper.yaml claim `imbalance`
FLUCT_SUPPORT, FLUCT_CONTRA = 2.0, 1.2  # paper.yaml claim `fluctuation`
BOOTSTRAP = 2000  # replicates of the testbed's ratio of medians
POLICY_NAMES = {"static": "static (DeepSpeed-like)", "fastermoe": "FasterMoE shadowing",
                "flexmoe": "FlexMoE (reconstruction)", "flexmoe_oracle": "FlexMoE, no lag (diagnostic)",
                "ideal": "perfect balance (bound)"}


def seed_values(record: dict[str, Any], metric: str) -> list[float]:
    return [float(run["metrics"][metric]) for run in record["runs"]]


def mean_std(values: list[float]) -> tuple[float, float]:
    a = np.array(values, dtype=float)
    return float(a.mean()), float(a.std(ddof=1)) if len(a) > 1 else 0.0


def fmt(values: list[float], digits: int = 2) -> str:
    m, s = mean_std(values)
    return f"{m:.{digits}f} ± {s:.{digits}f}"


def band_status(values: dict[str, float], support: float, contra: float) -> str:
    """paper.yaml's two-threshold rule on per-setting means, through shared.verdict.direction_status on their
    range: supported when every value exceeds `support`, contradicted when none exceeds `contra`, else
    inconclusive (a range between the thresholds is undecided by design)."""
    if not values:
        return NOT_RUN
    low, high = min(values.values()), max(values.values())
    if direction_status(low, high, margin=support) == SUPPORTED:
        return SUPPORTED
    return CONTRADICTED if direction_status(low, high, margin=contra) == CONTRADICTED else INCONCLUSIVE


def premise_checks(records: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    imb = {n: float(np.mean(seed_values(r, "imbalance_second_half"))) for n, r in records.items()}
    flu = {n: float(np.mean(seed_values(r, "tv_over_noise"))) for n, r in records.items()}
    return {"imbalance": {"status": band_status(imb, IMBALANCE_SUPPORT, IMBALANCE_CONTRA), "per_setting": imb,
                          "thresholds": [IMBALANCE_CONTRA, IMBALANCE_SUPPORT]},
            "fluctuation": {"status": band_status(flu, FLUCT_SUPPORT, FLUCT_CONTRA), "per_setting": flu,
                            "thresholds": [FLUCT_CONTRA, FLUCT_SUPPORT],
                            "spearman_consecutive": {n: float(np.mean(seed_values(r, "spearman_consecutive")))
                                                     for n, r in records.items()}}}


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
        ratio = {"static_over_flexmoe": [s["static"]["mean_ms"] / s["flexmoe"]["mean_ms"] for s in seeds],
                 "fastermoe_over_flexmoe": [s["fastermoe"]["mean_ms"] / s["flexmoe"]["mean_ms"] for s in seeds],
                 "static_over_fastermoe": [s["static"]["mean_ms"] / s["fastermoe"]["mean_ms"] for s in seeds],
                 "static_over_oracle": [s["static"]["mean_ms"] / s["flexmoe_oracle"]["mean_ms"] for s in seeds]}
        entry["ratios"] = {k: float(np.mean(v)) for k, v in ratio.items()}
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
    """The testbed's replicated-vs-static comparison per hot share; the most skewed share decides."""
    if a2a is None:
        return {"status": NOT_RUN, "why": "the testbed measurement (python -m replications.flexmoe.a2a_bench, "
                                          "root + ip netns) has not run"}
    by = {(r["placement"], r["hot_share"]): r for r in a2a["rows"]}
    shares = sorted({r["hot_share"] for r in a2a["rows"]})
    per_share = {}
    for h in shares:
        s, r = by.get(("static", h)), by.get(("replicated", h))
        if s and r:
            per_share[h] = {"static_ms": s["median_ms"], "replicated_ms": r["median_ms"],
                            **median_ratio(r["seconds"], s["seconds"])}
            other = by.get(("replicated_same_node", h))
            if other:
                per_share[h]["same_node_ms"] = other["median_ms"]
    status = per_share[max(per_share)]["status"] if per_share else NOT_RUN
    allreduce = {k: v["median_ms"] for k, v in a2a.get("replica_allreduce", {}).items()}
    return {"status": status, "per_share": per_share, "replica_allreduce_ms": allreduce,
            "load_average": [a2a["load_average_before"][0], a2a["load_average_after"][0]]}


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


def scale_words(records: dict[str, dict[str, Any]], dataset: str) -> str:
    """Where a premise verdict holds: the dataset, the model's size (non-embedding parameters per token and in
    all, over the settings), the steps and the tokens each seed trained on."""
    first = next(iter(records.values()))
    p = first["config"]["paper"]["protocol"]
    sizes = [active_parameters(r["config"]) for r in records.values()]
    per_token = sorted({round(a / 1e6, 2) for _, a in sizes})
    total = sorted({round(t / 1e6, 1) for t, _ in sizes})
    experts = sorted({int(r["config"]["model"]["num_experts"]) for r in records.values()})
    steps = first["runs"][0]["train"]["steps"]  # the steps run (scale.max_epochs caps the protocol's)
    tokens = steps * p["batch_size"] * p["seq_len"]
    return (f"at this scale: {SHORT[dataset]}, a {p['layers']}-layer d{p['d_model']} GPT-MoE with E = "
            + "/".join(map(str, experts)) + " experts, "
            + "-".join(f"{x:.2f}" for x in (per_token[0], per_token[-1])[:len(per_token)]) + "M non-embedding "
            + "parameters per token (" + "-".join(f"{x:.1f}" for x in (total[0], total[-1])[:len(total)])
            + f"M in all), {steps} steps of {p['batch_size']} x {p['seq_len']} {UNITS[dataset]} "
            f"({tokens / 1e6:.2f}M per seed), {len(first['runs'])} seed(s)")


def premise_claim(base: dict[str, Any], claim_id: str, records: dict[str, dict[str, Any]],
                  check: dict[str, Any] | None, dataset: str) -> Claim:
    """One dataset's verdict on one premise claim (paper.yaml's rule over that dataset's (gate, E) settings)."""
    name = PREMISE_DATASETS[dataset]
    if not records or check is None:
        how = f" ({RUN_TS})" if dataset == "tinyshakespeare" else ""
        return Claim(**base, status=NOT_RUN, evidence=f"{name}: no complete records{how}")
    values = check["per_setting"]
    contra, support = check["thresholds"]
    what = ("second-half max/mean expert load" if claim_id == "imbalance"
            else "TV between consecutive windows / noise floor")
    # WikiText-2's evidence reads as it always has (its verdict unchanged); another dataset's names itself
    lead = "" if dataset == DATASET else f"{name}: "
    evidence = (f"{lead}{what}, mean over seeds: " + ", ".join(f"{n} {v:.2f}" for n, v in values.items())
                + f" (supported above {support:g} in every setting, contradicted below {contra:g} in every one)")
    if len(values) > 1:
        interval, unit = (min(values.values()), max(values.values())), f"{what}: smallest setting, range over (gate, E) settings"
    else:  # one setting: its range over seeds (the rule judges the 3-seed mean)
        (setting,) = values
        per_seed = seed_values(records[setting], "imbalance_second_half" if claim_id == "imbalance" else "tv_over_noise")
        interval, unit = (min(per_seed), max(per_seed)), f"{what}: {setting}, range over seeds"
    return Claim(**base, status=check["status"], evidence=evidence, effect=min(values.values()), interval=interval,
                 unit=unit, scale=scale_words(records, dataset))


def claim_checks(records, sim_summary, premise, a2a,
                 extra: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] | None = None,
                 ) -> tuple[list[Claim], dict[str, dict[str, Any]]]:
    """One Claim per paper.yaml claim, and the numbers behind each (by claim id); the premise claims once more per
    dataset of `extra` (dataset -> (its records, its premise checks or None)), right after WikiText-2's, with their
    numbers under '<claim id>@<dataset>'."""
    paper = yaml.safe_load(PAPER.read_text())
    claims, details = [], {}
    for claim in paper["claims"]:
        base = {"text": claim["text"], "kind": claim["kind"], "source": claim["source"], "verified": claim["verified"]}
        detail: dict[str, Any] = {"tested_as": claim["tested_as"], "values": claim.get("values")}
        details[claim["id"]] = detail
        if claim["id"] in ("speedup_deepspeed", "speedup_fastermoe"):
            key = "static_over_flexmoe" if claim["id"] == "speedup_deepspeed" else "fastermoe_over_flexmoe"
            detail["modelled_ratio"] = {k: v["ratios"][key] for k, v in sim_summary.items()}
            vals = list(detail["modelled_ratio"].values())
            evidence = ("end-to-end GPU-cluster training; MODELLED, not measured (simulator on the recorded traces): "
                        f"ratio {min(vals):.3f}-{max(vals):.3f} over the settings and links" if vals else
                        "end-to-end GPU-cluster training; the simulator has not run")
            claims.append(Claim(**base, status=NOT_TESTABLE, evidence=evidence))
        elif claim["id"] in ("imbalance", "fluctuation"):
            if records:
                detail.update(premise[claim["id"]])
            claims.append(premise_claim(base, claim["id"], records, premise.get(claim["id"]), DATASET))
            for dataset, (recs, checks) in (extra or {}).items():
                check = checks[claim["id"]] if checks else None
                details[f"{claim['id']}@{dataset}"] = {"tested_as": claim["tested_as"], **(check or {})}
                on = {**base, "text": f"{base['text']}{TEXT_SUFFIX[dataset]}"}  # one line per dataset, named
                claims.append(premise_claim(on, claim["id"], recs, check, dataset))
        elif claim["id"] == "replication_a2a":
            detail.update(a2a)
            if not a2a.get("per_share"):
                claims.append(Claim(**base, status=a2a["status"], evidence=a2a.get("why", "no comparable placements")))
                continue
            h = max(a2a["per_share"])
            v = a2a["per_share"][h]
            evidence = (f"share {h:.2f}: replicated {v['replicated_ms']:.1f} ms vs static {v['static_ms']:.1f} ms "
                        f"(x{v['ratio']:.2f} [{v['ratio_ci95'][0]:.2f}, {v['ratio_ci95'][1]:.2f}] 95% bootstrap, "
                        f"p={v['p_two_sided']:.2g}); replica all-reduce "
                        + ", ".join(f"{x:.0f} ms" for x in a2a["replica_allreduce_ms"].values()))
            claims.append(Claim(**base, status=a2a["status"], evidence=evidence, effect=v["ratio"],
                                interval=tuple(v["ratio_ci95"]),
                                unit=f"x (replicated / static median all-to-all time, share {h:.2f})"))
        else:
            raise ValueError(f"flexmoe paper.yaml: no check for claim '{claim['id']}'")
    return claims, details


def premise_table(records: dict[str, dict[str, Any]], dataset: str) -> Table:
    """One dataset's premise statistics per setting (mean ± std over seeds); WikiText-2 reports test PPL, Tiny
    Shakespeare (no test part) its validation loss in nats per character."""
    quality, metric, digits = (("test PPL", "test_ppl", 0) if dataset == DATASET
                               else ("valid loss (nats/char)", "valid_loss", 3))
    header = ["setting", quality, "imbalance max/mean (all steps)", "first half", "second half", "TV consecutive",
              "noise floor", "TV / floor", "Spearman consecutive", "Spearman 5 windows apart", "hot-expert changes",
              "dropped", "wall time (all seeds)"]
    rows = []
    for name, r in records.items():
        def v(m: str, d: int = 2, r: dict = r) -> str:
            return fmt(seed_values(r, m), d)
        rows.append([name, v(metric, digits), v("imbalance_mean"), v("imbalance_first_half"),
                     v("imbalance_second_half"), v("tv_consecutive", 3), v("tv_noise_floor", 3), v("tv_over_noise", 1),
                     v("spearman_consecutive"), v("spearman_lagged"), v("hot_expert_changes", 1),
                     v("dropped_fraction", 3), f"{r['wall_seconds'] / 60:.1f} min"])
    return Table(header, rows)


def protocol_words(records: dict[str, dict[str, Any]], dataset: str) -> str:
    any_r = next(iter(records.values()))
    p = any_r["config"]["paper"]["protocol"]
    steps = any_r["runs"][0]["train"]["steps"]
    return (f"{steps} optimiser steps per seed, batch {p['batch_size']} x {p['seq_len']} {UNITS[dataset]}, "
            f"{p['trace_sources']} trace sources (one sequence each).")


def premise_blocks(records: dict[str, dict[str, Any]]) -> list[Any]:
    return ["## 1. The premise, measured", premise_table(records, DATASET),
            "Read with the figure: imbalance and window-to-window change are largest early (steps 10-50) and "
            "decay as training settles and the learning rate decays linearly to 0 at the last step; the "
            "second-half figures are what a long run's steady state would look like at best.",
            protocol_words(records, DATASET)]


def char_premise_blocks(records: dict[str, dict[str, Any]], folder: Path) -> list[Any]:
    """Tiny Shakespeare's premise section: the same statistics on nanoGPT's CPU protocol (cosine schedule to min_lr,
    random windows), and the same figure; judged by the same rule (the Verdicts table's second rows)."""
    dataset = "tinyshakespeare"
    return [f"### {PREMISE_DATASETS[dataset]}",
            "The same traces and statistics on the character-level protocol (conf/dataset/tinyshakespeare.yaml: "
            "nanoGPT's CPU run, random 64-character windows, learning rate cosine-decayed to its floor), narrowed to "
            "the E = 8 settings (conf/paper/flexmoe.yaml); validation loss in nats per character, as nanoGPT reports.",
            premise_table(records, dataset), protocol_words(records, dataset),
            Figure("premise_tinyshakespeare.png", draw=lambda: plot_premise(records, folder),
                   caption="premise_tinyshakespeare", dpi=110)]


def comparison_table(by_dataset: dict[str, tuple[dict[str, Any], dict[str, Any]]]) -> Table:
    """The premise side by side: per dataset, each claim's per-setting means, their range and the verdict."""
    rows = []
    for dataset, (records, checks) in by_dataset.items():
        for claim_id in ("imbalance", "fluctuation"):
            c = checks[claim_id]
            v = c["per_setting"]
            rows.append([PREMISE_DATASETS[dataset], claim_id, ", ".join(f"{n} {x:.2f}" for n, x in v.items()),
                         f"[{min(v.values()):.2f}, {max(v.values()):.2f}]", c["status"],
                         scale_words(records, dataset).removeprefix("at this scale: ")])
    return Table(["dataset", "claim", "mean over seeds per setting", "range over settings", "status", "scale"], rows,
                 note="imbalance: second-half max/mean expert load (supported above 1.5 in every setting, contradicted "
                      "below 1.1 in every one); fluctuation: TV between consecutive 10-step windows over its noise "
                      "floor (supported above 2, contradicted below 1.2). Same rule, same code, per dataset.")


def simulation_blocks(sim: dict[str, Any], sim_summary: dict[str, Any]) -> list[Any]:
    k = sim["constants"]
    text = (f"W = E ranks, {k['ranks_per_node']} per node; trace shares scaled to {k['tokens_per_rank']} tokens "
            f"per rank per step (times top-k); experts d {k['d_model']} x h {k['d_hidden']}, "
            f"{k['bytes_per_value']} bytes per value; compute {float(k['flops_per_s']):.3g} FLOP/s per rank "
            "(FasterMoE's policy constant); all-to-all / sync / transfers from the α–β model "
            f"({k['comm_fit']}, fitted on the testbed: links '400' and '2000' Mbit/s), and the ASSUMED "
            "GPU-cluster figures of replications/moe/README.md as link 'assumed_gpu'. FlexMoE reconstruction: "
            f"interval {k['flexmoe']['interval']} steps, {k['flexmoe']['extra_slots']} extra slot per rank, "
            f"at most {k['flexmoe']['max_ops']} operations per decision, trigger max/mean > "
            f"{k['flexmoe']['threshold']} (all our choices). Model: replications/flexmoe/stepmodel.py; "
            "policies: policies.py. Mean over seeds of the mean step time (two MoE layers).")
    header = (["setting", "link"] + [POLICY_NAMES[p] + " ms" for p in POLICY_NAMES]
              + ["static / FlexMoE", "FasterMoE / FlexMoE", "static / FasterMoE", "order (fastest first)",
                 "FlexMoE ops (mean per run)", "FasterMoE shadowed per step"])
    rows = []
    for e in sim_summary.values():
        ops = ", ".join(f"{k} {v:.1f}" for k, v in e["ops"].items() if v)
        rows.append([e["model"], e["link"], *(f"{e['mean_ms'][p]:.1f}" for p in POLICY_NAMES),
                     f"{e['ratios']['static_over_flexmoe']:.3f}", f"{e['ratios']['fastermoe_over_flexmoe']:.3f}",
                     f"{e['ratios']['static_over_fastermoe']:.3f}", e["order"], ops or "none",
                     f"{e['mean_shadowed']:.2f}"])
    return ["## 2. Placement policies on the traces: MODELLED step time (not measured)", text,
            Table(header, rows, note="Every number in this section is an output of the model."),
            Figure("simulation.png", draw=lambda: plot_simulation(sim_summary), caption="simulation", dpi=110)]


def a2a_blocks(a2a_raw: dict[str, Any] | None, a2a: dict[str, Any]) -> list[Any]:
    heading = "## 3. A replicated heavy expert on the testbed: MEASURED all-to-all"
    if a2a_raw is None:
        return [heading, f"Not run: {a2a.get('why', '')}."]
    tb = a2a_raw["testbed"]
    text = (f"{tb['nodes']} nodes x {tb['ranks_per_node']} gloo ranks in network namespaces, inter-node links "
            f"shaped to {tb['inter_mbit']} Mbit/s (replications/moe/testbed.py); {tb['tokens_per_rank']} tokens "
            f"per rank of {tb['d_model']} fp32 values, dispatch + combine (all_to_all_single), median of "
            f"{tb['trials']} trials, placements interleaved; placements: "
            + "; ".join(f"{n} {p}" for n, p in a2a_raw["placements"].items()) +
            f". 1-min load average {a2a['load_average'][0]:.1f} before, {a2a['load_average'][1]:.1f} after "
            "(shared machine, communication only).")
    header = ["share of tokens to expert 0", "static ms", "replicated (other node) ms", "replicated (same node) ms",
              "replicated / static [95% bootstrap interval]", "Mann-Whitney p"]
    rows = [[f"{h:.2f}", f"{v['static_ms']:.1f}", f"{v['replicated_ms']:.1f}", f"{v.get('same_node_ms', float('nan')):.1f}",
             f"{v['ratio']:.3f} [{v['ratio_ci95'][0]:.3f}, {v['ratio_ci95'][1]:.3f}]", f"{v['p_two_sided']:.2g}"]
            for h, v in a2a["per_share"].items()]
    allreduce = ("Replica gradient all-reduce (once per step, 2 d h fp32 values of expert 0, median): "
                 + ", ".join(f"{k} {v:.1f} ms" for k, v in a2a["replica_allreduce_ms"].items()) + ".")
    return [heading, text, Table(header, rows), allreduce,
            Figure("replica_a2a.png", draw=lambda: plot_a2a(a2a_raw), caption="replica_a2a", dpi=110)]


def plot_premise(records: dict[str, dict[str, Any]], folder: Path) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from replications.flexmoe import stats

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.2))
    for name, r in records.items():
        curves, tvs = [], []
        window = int(r["config"]["paper"]["protocol"]["window"])
        for run in r["runs"]:
            loads = np.load(folder / "traces" / run["train"]["trace"])["routed"].sum(2).astype(float)  # [steps, L, E]
            curves.append((loads.max(-1) / loads.mean(-1)).mean(1))
            w = [stats.windows(loads[:, i], window) for i in range(loads.shape[1])]
            tvs.append(np.mean([stats.tv_distance(x[:-1], x[1:]) for x in w], axis=0))
        c = np.mean(curves, axis=0)
        smooth = np.convolve(c, np.ones(5) / 5, mode="valid")
        axes[0].plot(np.arange(len(smooth)) + 3, smooth, label=name)
        axes[1].plot(np.arange(1, len(tvs[0]) + 1) * window, np.mean(tvs, axis=0), label=name)
    axes[0].set(title="imbalance per step (max/mean load; 5-step mean)",
                xlabel="optimiser step", ylabel="max / mean")
    axes[1].set(title="TV distance between consecutive windows", xlabel="optimiser step", ylabel="TV")
    for ax in axes[:2]:
        ax.legend(fontsize=8)
    first = next(iter(records.values()))
    run = first["runs"][0]
    loads = np.load(folder / "traces" / run["train"]["trace"])["routed"].sum(2)[:, 0].astype(float)
    w = stats.shares(stats.windows(loads, int(first["config"]["paper"]["protocol"]["window"])))
    im = axes[2].imshow(w.T, aspect="auto", cmap="viridis", interpolation="nearest")
    axes[2].set(title=f"{first['model']} seed {run['seed']} layer 0: load share per window",
                xlabel="window", ylabel="expert")
    fig.colorbar(im, ax=axes[2])
    fig.tight_layout()
    return fig


def plot_simulation(sim_summary: dict[str, Any]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    links = sorted({e["link"] for e in sim_summary.values()})
    fig, axes = plt.subplots(1, len(links), figsize=(5.5 * len(links), 4.2), squeeze=False)
    policies = list(POLICY_NAMES)
    for ax, link in zip(axes[0], links):
        entries = [e for e in sim_summary.values() if e["link"] == link]
        x = np.arange(len(entries))
        for i, p in enumerate(policies):
            ax.bar(x + (i - 2) * 0.16, [e["mean_ms"]["static"] / e["mean_ms"][p] for e in entries], 0.16,
                   label=POLICY_NAMES[p])
        ax.set_xticks(x, [e["model"] for e in entries])
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set(title=f"MODELLED speed-up over static, link {link}", ylabel="static time / policy time")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_a2a(a2a_raw: dict[str, Any]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    names = list(a2a_raw["placements"])
    shares = sorted({r["hot_share"] for r in a2a_raw["rows"]})
    by = {(r["placement"], r["hot_share"]): r for r in a2a_raw["rows"]}
    x = np.arange(len(shares))
    for i, n in enumerate(names):
        ax.bar(x + (i - 1) * 0.25, [by[n, h]["median_ms"] for h in shares], 0.25, label=n)
    ax.set_xticks(x, [f"{h:.2f}" for h in shares])
    ax.set(title="MEASURED dispatch + combine on the 2 x 2 testbed", xlabel="share of tokens to expert 0",
           ylabel="median ms")
    ax.legend()
    fig.tight_layout()
    return fig


def build(results: PaperResults) -> PaperReport | None:
    """The page from the wikitext2 and tinyshakespeare records (None without either), their traces and the side
    files where present."""
    found, found_ts = results.models(DATASET), results.models("tinyshakespeare")
    records = {name: found[name] for name in ORDER if name in found}
    ts = {name: found_ts[name] for name in ORDER if name in found_ts}
    if not records and not ts:
        return None
    sim, a2a_raw = results.side_file("simulation.json"), results.side_file("replica_a2a.json")
    premise = premise_checks(records)
    ts_premise = premise_checks(ts) if ts else None
    sim_summary = simulation_summary(sim)
    a2a = a2a_check(a2a_raw)
    claims, details = claim_checks(records, sim_summary, premise, a2a, {"tinyshakespeare": (ts, ts_premise)})
    any_r = next(iter((records or ts).values()))
    seeds = len(any_r["runs"])
    window = any_r["config"]["paper"]["protocol"]["window"]
    intro = ("Traces: the shared WikiText-2 GPT-MoE (2 MoE layers, d 128; replications/moe/lm.py), every step's "
             f"routed token-expert choices per expert (before capacity drops), {seeds} seed(s) per setting "
             f"(replications/flexmoe/train.py). Windows of {window} steps; TV = total-variation distance between "
             "consecutive windows' load shares; noise floor = the same distance for two multinomial draws from one "
             "share vector (replications/flexmoe/stats.py). Mean ± std over seeds, mean over the two layers.")
    if ts:
        intro += (" The premise also on character-level Tiny Shakespeare (4 MoE layers, d 128; mean over its four "
                  "layers), beside WikiText-2's, each verdict naming its scale.")
    folder = results.folder
    blocks: list[Any] = ["# FlexMoE on CPU: routing traces, a placement simulator (modelled), a replicated expert "
                         "(measured)", intro]
    if records:
        blocks += [*premise_blocks(records),
                   Figure("premise.png", draw=lambda: plot_premise(records, folder), caption="premise", dpi=110)]
    else:
        blocks += ["## 1. The premise, measured", "WikiText-2: no complete records."]
    if ts:
        blocks += char_premise_blocks(ts, folder)
        both = {DATASET: (records, premise)} if records else {}
        blocks += ["### The premise per dataset", comparison_table({**both, "tinyshakespeare": (ts, ts_premise)})]
    else:
        blocks += [f"Tiny Shakespeare (character level): not run yet ({RUN_TS})."]
    if sim is not None:
        blocks += simulation_blocks(sim, sim_summary)
    blocks += a2a_blocks(a2a_raw, a2a)
    paper = yaml.safe_load(PAPER.read_text())
    blocks += ["## How each claim was tested",
               Table(["claim", "tested as"], [[c["text"], c["tested_as"]] for c in paper["claims"]],
                     note="The measured effect of each is under Verdicts; the numbers behind it in claims.json "
                          "(data.checks; another dataset's premise under '<claim>@<dataset>')."),
               f"Hardware: {any_r['environment']['hardware']['cpu']}, "
               f"{any_r['environment']['hardware']['torch_threads']} torch thread(s) per run, shared 2-core machine."]
    return PaperReport(blocks=blocks, claims=claims,
                       data={"checks": details, "simulation_summary": sim_summary,
                             "premise_scale": {d: scale_words(r, d) for d, r in ((DATASET, records),
                                                                                 ("tinyshakespeare", ts)) if r}})
