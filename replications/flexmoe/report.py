"""``python -m replications.flexmoe.report [results_dir]``: the tables, the claim checks and the figures.

Reads results/flexmoe/wikitext2/<model>.json (the runner's, with each run's trace statistics), the traces
(results/flexmoe/traces/*.npz), results/flexmoe/simulation.json (simulate.py: MODELLED) and, when it exists,
results/flexmoe/replica_a2a.json (a2a_bench.py: MEASURED on the testbed). Writes results/flexmoe/TABLE.md,
claims.json, premise.png, simulation.png and replica_a2a.png. The claim rules are those of paper.yaml
(`tested_as`); thresholds are ours and named there.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from scipy import stats as sstats

from shared.atomic import atomic_path, write_json_atomic, write_text_atomic
from shared.report_data import complete_records

ROOT = Path(__file__).resolve().parents[2] / "results"
PAPER = Path(__file__).with_name("paper.yaml")
ORDER = ["switch_e8", "switch_e16", "gshard_e8", "gshard_e16"]
IMBALANCE_SUPPORT, IMBALANCE_CONTRA = 1.5, 1.1  # paper.yaml claim `imbalance`
FLUCT_SUPPORT, FLUCT_CONTRA = 2.0, 1.2  # paper.yaml claim `fluctuation`
POLICY_NAMES = {"static": "static (DeepSpeed-like)", "fastermoe": "FasterMoE shadowing",
                "flexmoe": "FlexMoE (reconstruction)", "flexmoe_oracle": "FlexMoE, no lag (diagnostic)",
                "ideal": "perfect balance (bound)"}


def load(folder: Path) -> dict[str, dict[str, Any]]:
    return complete_records(folder, ORDER)


def seed_values(record: dict[str, Any], metric: str) -> list[float]:
    return [float(run["metrics"][metric]) for run in record["runs"]]


def mean_std(values: list[float]) -> tuple[float, float]:
    a = np.array(values, dtype=float)
    return float(a.mean()), float(a.std(ddof=1)) if len(a) > 1 else 0.0


def fmt(values: list[float], digits: int = 2) -> str:
    m, s = mean_std(values)
    return f"{m:.{digits}f} ± {s:.{digits}f}"


def premise_checks(records: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    imb = {n: float(np.mean(seed_values(r, "imbalance_second_half"))) for n, r in records.items()}
    flu = {n: float(np.mean(seed_values(r, "tv_over_noise"))) for n, r in records.items()}

    def verdict(values: dict[str, float], support: float, contra: float) -> str:
        if not values:
            return "not run"
        if all(v > support for v in values.values()):
            return "supported"
        if all(v < contra for v in values.values()):
            return "contradicted"
        return "inconclusive"

    return {"imbalance": {"status": verdict(imb, IMBALANCE_SUPPORT, IMBALANCE_CONTRA), "per_setting": imb,
                          "thresholds": [IMBALANCE_CONTRA, IMBALANCE_SUPPORT]},
            "fluctuation": {"status": verdict(flu, FLUCT_SUPPORT, FLUCT_CONTRA), "per_setting": flu,
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


def a2a_check(a2a: dict[str, Any] | None) -> dict[str, Any]:
    if a2a is None:
        return {"status": "not run", "why": "the testbed measurement (python -m replications.flexmoe.a2a_bench, "
                                             "root + ip netns) has not run"}
    by = {(r["placement"], r["hot_share"]): r for r in a2a["rows"]}
    shares = sorted({r["hot_share"] for r in a2a["rows"]})
    per_share = {}
    for h in shares:
        s, r = by.get(("static", h)), by.get(("replicated", h))
        if s and r:
            p = float(sstats.mannwhitneyu(r["seconds"], s["seconds"], alternative="two-sided").pvalue)
            per_share[h] = {"static_ms": s["median_ms"], "replicated_ms": r["median_ms"],
                            "ratio": r["median_ms"] / s["median_ms"], "p_two_sided": p}
            other = by.get(("replicated_same_node", h))
            if other:
                per_share[h]["same_node_ms"] = other["median_ms"]
    top = per_share[max(per_share)] if per_share else None
    status = ("not run" if top is None else "supported" if top["ratio"] < 1 and top["p_two_sided"] < 0.05 else
              "contradicted" if top["ratio"] > 1 and top["p_two_sided"] < 0.05 else "inconclusive")
    allreduce = {k: v["median_ms"] for k, v in a2a.get("replica_allreduce", {}).items()}
    return {"status": status, "per_share": per_share, "replica_allreduce_ms": allreduce,
            "load_average": [a2a["load_average_before"][0], a2a["load_average_after"][0]]}


def claim_checks(records, sim_summary, premise, a2a) -> list[dict[str, Any]]:
    paper = yaml.safe_load(PAPER.read_text())
    out = []
    for claim in paper["claims"]:
        c = {"id": claim["id"], "text": claim["text"], "source": claim["source"], "verified": claim["verified"],
             "kind": claim["kind"], "values": claim.get("values"), "tested_as": claim["tested_as"]}
        if claim["id"] in ("speedup_deepspeed", "speedup_fastermoe"):
            c["status"] = "not testable here"
            key = "static_over_flexmoe" if claim["id"] == "speedup_deepspeed" else "fastermoe_over_flexmoe"
            c["modelled_ratio"] = {k: v["ratios"][key] for k, v in sim_summary.items()}
            if c["modelled_ratio"]:
                vals = list(c["modelled_ratio"].values())
                c["evidence"] = (f"MODELLED, not measured (simulator on the recorded traces): ratio "
                                 f"{min(vals):.3f}-{max(vals):.3f} over the settings and links")
            else:
                c["evidence"] = "the simulator has not run"
        elif claim["id"] in ("imbalance", "fluctuation"):
            c.update(premise[claim["id"]] if records else {"status": "not run"})
        elif claim["id"] == "replication_a2a":
            c.update(a2a)
        out.append(c)
    return out


def table(records, premise, sim, sim_summary, a2a_raw, a2a, checks) -> str:
    any_r = next(iter(records.values())) if records else None
    seeds = len(any_r["runs"]) if any_r else 0
    window = any_r["config"]["paper"]["protocol"]["window"] if any_r else "?"
    lines = ["# FlexMoE on CPU: routing traces, a placement simulator (modelled), a replicated expert (measured)", "",
             "Traces: the shared WikiText-2 GPT-MoE (2 MoE layers, d 128; replications/moe/lm.py), every step's "
             f"routed token-expert choices per expert (before capacity drops), {seeds} seed(s) per setting "
             f"(replications/flexmoe/train.py). Windows of {window} steps; TV = total-variation distance between "
             "consecutive windows' load shares; noise floor = the same distance for two multinomial draws from one "
             "share vector (replications/flexmoe/stats.py). Mean ± std over seeds, mean over the two layers.", "",
             "## 1. The premise, measured", "",
             "| setting | test PPL | imbalance max/mean (all steps) | first half | second half | TV consecutive | "
             "noise floor | TV / floor | Spearman consecutive | Spearman 5 windows apart | hot-expert changes | "
             "dropped | wall time (all seeds) |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in records.items():
        def v(m: str, d: int = 2, r: dict = r) -> str:
            return fmt(seed_values(r, m), d)
        lines.append(f"| {name} | {v('test_ppl', 0)} | {v('imbalance_mean')} | {v('imbalance_first_half')} | "
                     f"{v('imbalance_second_half')} | {v('tv_consecutive', 3)} | {v('tv_noise_floor', 3)} | "
                     f"{v('tv_over_noise', 1)} | {v('spearman_consecutive')} | {v('spearman_lagged')} | "
                     f"{v('hot_expert_changes', 1)} | {v('dropped_fraction', 3)} | {r['wall_seconds'] / 60:.1f} min |")
    if any_r is not None:
        p = any_r["config"]["paper"]["protocol"]
        steps = any_r["runs"][0]["train"]["steps"]
        lines += ["", "Read with the figure: imbalance and window-to-window change are largest early (steps 10-50) and "
                  "decay as training settles and the learning rate decays linearly to 0 at the last step; the "
                  "second-half figures are what a long run's steady state would look like at best.",
                  "", f"{steps} optimiser steps per seed, batch {p['batch_size']} x {p['seq_len']} tokens, "
                  f"{p['trace_sources']} trace sources (one sequence each). Figure: premise.png."]
    if sim is not None:
        k = sim["constants"]
        lines += ["", "## 2. Placement policies on the traces: MODELLED step time (not measured)", "",
                  f"W = E ranks, {k['ranks_per_node']} per node; trace shares scaled to {k['tokens_per_rank']} tokens "
                  f"per rank per step (times top-k); experts d {k['d_model']} x h {k['d_hidden']}, "
                  f"{k['bytes_per_value']} bytes per value; compute {float(k['flops_per_s']):.3g} FLOP/s per rank "
                  "(FasterMoE's policy constant); all-to-all / sync / transfers from the α–β model "
                  f"({k['comm_fit']}, fitted on the testbed: links '400' and '2000' Mbit/s), and the ASSUMED "
                  "GPU-cluster figures of replications/moe/README.md as link 'assumed_gpu'. FlexMoE reconstruction: "
                  f"interval {k['flexmoe']['interval']} steps, {k['flexmoe']['extra_slots']} extra slot per rank, "
                  f"at most {k['flexmoe']['max_ops']} operations per decision, trigger max/mean > "
                  f"{k['flexmoe']['threshold']} (all our choices). Model: replications/flexmoe/stepmodel.py; "
                  "policies: policies.py. Mean over seeds of the mean step time (two MoE layers).", "",
                  "| setting | link | " + " | ".join(POLICY_NAMES[p] + " ms" for p in POLICY_NAMES) +
                  " | static / FlexMoE | FasterMoE / FlexMoE | static / FasterMoE | order (fastest first) | "
                  "FlexMoE ops (mean per run) | FasterMoE shadowed per step |",
                  "|---|---|" + "---|" * (len(POLICY_NAMES) + 6)]
        for e in sim_summary.values():
            ops = ", ".join(f"{k} {v:.1f}" for k, v in e["ops"].items() if v)
            lines.append(f"| {e['model']} | {e['link']} | " + " | ".join(f"{e['mean_ms'][p]:.1f}" for p in POLICY_NAMES)
                         + f" | {e['ratios']['static_over_flexmoe']:.3f} | {e['ratios']['fastermoe_over_flexmoe']:.3f} | "
                         f"{e['ratios']['static_over_fastermoe']:.3f} | {e['order']} | {ops or 'none'} | "
                         f"{e['mean_shadowed']:.2f} |")
        lines += ["", "Figure: simulation.png. Every number in this section is an output of the model."]
    lines += ["", "## 3. A replicated heavy expert on the testbed: MEASURED all-to-all", ""]
    if a2a_raw is None:
        lines.append(f"Not run: {a2a.get('why', '')}.")
    else:
        tb = a2a_raw["testbed"]
        lines += [f"{tb['nodes']} nodes x {tb['ranks_per_node']} gloo ranks in network namespaces, inter-node links "
                  f"shaped to {tb['inter_mbit']} Mbit/s (replications/moe/testbed.py); {tb['tokens_per_rank']} tokens "
                  f"per rank of {tb['d_model']} fp32 values, dispatch + combine (all_to_all_single), median of "
                  f"{tb['trials']} trials, placements interleaved; placements: "
                  + "; ".join(f"{n} {p}" for n, p in a2a_raw["placements"].items()) +
                  f". 1-min load average {a2a['load_average'][0]:.1f} before, {a2a['load_average'][1]:.1f} after "
                  "(shared machine, communication only).", "",
                  "| share of tokens to expert 0 | static ms | replicated (other node) ms | replicated (same node) ms | "
                  "replicated / static | Mann-Whitney p |", "|---|---|---|---|---|---|"]
        for h, v in a2a["per_share"].items():
            lines.append(f"| {h:.2f} | {v['static_ms']:.1f} | {v['replicated_ms']:.1f} | "
                         f"{v.get('same_node_ms', float('nan')):.1f} | {v['ratio']:.3f} | {v['p_two_sided']:.2g} |")
        lines += ["", "Replica gradient all-reduce (once per step, 2 d h fp32 values of expert 0, median): " +
                  ", ".join(f"{k} {v:.1f} ms" for k, v in a2a["replica_allreduce_ms"].items()) +
                  ". Figure: replica_a2a.png."]
    lines += ["", "## Claims", "", "| claim | source (verified) | tested as | measured | status |", "|---|---|---|---|---|"]
    for c in checks:
        if c["id"] in ("imbalance", "fluctuation") and "per_setting" in c:
            measured = ", ".join(f"{n} {v:.2f}" for n, v in c["per_setting"].items())
        elif c["id"] == "replication_a2a" and c.get("per_share"):
            h = max(c["per_share"])
            v = c["per_share"][h]
            measured = (f"share {h:.2f}: replicated {v['replicated_ms']:.1f} ms vs static {v['static_ms']:.1f} ms "
                        f"(x{v['ratio']:.2f}, p={v['p_two_sided']:.2g}); replica all-reduce " +
                        ", ".join(f"{x:.0f} ms" for x in c["replica_allreduce_ms"].values()))
        else:
            measured = c.get("evidence") or c.get("why") or "-"
        lines.append(f"| {c['text']} | {c['source']} ({'yes' if c['verified'] else 'no'}) | {c['tested_as']} | "
                     f"{measured} | **{c['status']}** |")
    if any_r is not None:
        hw = any_r["environment"]["hardware"]
        lines += ["", f"Hardware: {hw['cpu']}, {hw['torch_threads']} torch thread(s) per run, shared 2-core machine."]
    return "\n".join(lines) + "\n"


def _save(fig, out: Path) -> None:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)


def plot_premise(records: dict[str, dict[str, Any]], folder: Path, out: Path) -> None:
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
    _save(fig, out)


def plot_simulation(sim_summary: dict[str, Any], out: Path) -> None:
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
    _save(fig, out)


def plot_a2a(a2a_raw: dict[str, Any], out: Path) -> None:
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
    _save(fig, out)


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else ROOT
    folder = root / "flexmoe"
    records = load(folder / "wikitext2")
    if not records:
        print(f"no complete flexmoe results under {folder / 'wikitext2'}", file=sys.stderr)
        return 1
    sim_path, a2a_path = folder / "simulation.json", folder / "replica_a2a.json"
    sim = json.loads(sim_path.read_text()) if sim_path.exists() else None
    a2a_raw = json.loads(a2a_path.read_text()) if a2a_path.exists() else None
    premise = premise_checks(records)
    sim_summary = simulation_summary(sim)
    a2a = a2a_check(a2a_raw)
    checks = claim_checks(records, sim_summary, premise, a2a)
    write_text_atomic(folder / "TABLE.md", table(records, premise, sim, sim_summary, a2a_raw, a2a, checks))
    write_json_atomic(folder / "claims.json", {"claims": checks, "simulation_summary": sim_summary})
    plot_premise(records, folder, folder / "premise.png")
    if sim_summary:
        plot_simulation(sim_summary, folder / "simulation.png")
    if a2a_raw is not None:
        plot_a2a(a2a_raw, folder / "replica_a2a.png")
    print((folder / "TABLE.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
