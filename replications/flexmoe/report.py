"""FlexMoE's page as data (``build``) from the wikitext2 and tinyshakespeare records (with each run's trace
statistics), the traces beside them (<paper folder>/traces/*.npz) and, where present, the side files the manual steps
wrote: simulation.json (simulate.py: MODELLED) and replica_a2a.json (a2a_bench.py: MEASURED on the testbed), both of
WikiText-2. The claims are paper.yaml's, judged by shared.claims (the premise statistics, the testbed's ratio and the
scales are in measures.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from replications.flexmoe.measures import NAMES, UNITS, a2a_check, simulation_summary
from shared.claims import load_claims, paper_claims
from shared.report.blocks import hardware_line, minutes, ordered
from shared.report.columns import column_table, seeds_column
from shared.report.figures import Bars, Heatmap, Panel, Plot, Rule, Series, draw
from shared.report.paper_hook import Figure, PaperReport, PaperResults, Table

DATASET = "wikitext2"  # the paper-like protocol: the simulator, the testbed and the page's first premise
RUN_TS = "make replicate-flexmoe dataset=tinyshakespeare"  # conf/paper/flexmoe.yaml header
PAPER = Path(__file__).with_name("paper.yaml")
ORDER = ["switch_e8", "switch_e16", "gshard_e8", "gshard_e16"]
POLICY_NAMES = {"static": "static (DeepSpeed-like)", "fastermoe": "FasterMoE shadowing",
                "flexmoe": "FlexMoE (reconstruction)", "flexmoe_oracle": "FlexMoE, no lag (diagnostic)",
                "ideal": "perfect balance (bound)"}


def premise_table(records: dict[str, dict[str, Any]], dataset: str) -> Table:
    """One dataset's premise statistics per setting (mean ± std over seeds); WikiText-2 reports test PPL, Tiny
    Shakespeare (no test part) its validation loss in nats per character."""
    quality = seeds_column("test PPL", "test_ppl", 0) if dataset == DATASET else \
        seeds_column("valid loss (nats/char)", "valid_loss", 3)
    return column_table(records.values(), [
        ("setting", lambda r: r["model"]), quality, seeds_column("imbalance max/mean (all steps)", "imbalance_mean"),
        seeds_column("first half", "imbalance_first_half"), seeds_column("second half", "imbalance_second_half"),
        seeds_column("TV consecutive", "tv_consecutive", 3), seeds_column("noise floor", "tv_noise_floor", 3),
        seeds_column("TV / floor", "tv_over_noise", 1), seeds_column("Spearman consecutive", "spearman_consecutive"),
        seeds_column("Spearman 5 windows apart", "spearman_lagged"), seeds_column("hot-expert changes", "hot_expert_changes", 1),
        seeds_column("dropped", "dropped_fraction", 3), ("wall time (all seeds)", lambda r: minutes(r["wall_seconds"]))])


def protocol_words(records: dict[str, dict[str, Any]], dataset: str) -> str:
    any_r = next(iter(records.values()))
    p = any_r["config"]["paper"]["protocol"]
    steps = any_r["runs"][0]["train"]["steps"]
    return (f"{steps} optimiser steps per seed, batch {p['batch_size']} x {p['seq_len']} {UNITS[dataset]}, "
            f"{p['trace_sources']} trace sources (one sequence each).")


def premise_blocks(records: dict[str, dict[str, Any]], folder: Path) -> list[Any]:
    return ["## 1. The premise, measured", premise_table(records, DATASET),
            "Read with the figure: imbalance and window-to-window change are largest early (steps 10-50) and "
            "decay as training settles and the learning rate decays linearly to 0 at the last step; the "
            "second-half figures are what a long run's steady state would look like at best.",
            protocol_words(records, DATASET),
            Figure("premise.png", draw=lambda: draw(plot_premise(records, folder)), caption="premise", dpi=110)]


def char_premise_blocks(records: dict[str, dict[str, Any]], folder: Path) -> list[Any]:
    """Tiny Shakespeare's premise section: the same statistics on nanoGPT's CPU protocol (cosine schedule to min_lr,
    random windows), and the same figure; judged by the same rule (the Verdicts table's second rows)."""
    dataset = "tinyshakespeare"
    return [f"### {NAMES[dataset]} (character level)",
            "The same traces and statistics on the character-level protocol (conf/dataset/tinyshakespeare.yaml: "
            "nanoGPT's CPU run, random 64-character windows, learning rate cosine-decayed to its floor), narrowed to "
            "the E = 8 settings (conf/paper/flexmoe.yaml); validation loss in nats per character, as nanoGPT reports.",
            premise_table(records, dataset), protocol_words(records, dataset),
            Figure("premise_tinyshakespeare.png", draw=lambda: draw(plot_premise(records, folder)),
                   caption="premise_tinyshakespeare", dpi=110)]


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
    rows = [[e["model"], e["link"], *(f"{e['mean_ms'][p]:.1f}" for p in POLICY_NAMES),
             *(f"{e['ratios'][k]:.3f}" for k in ("static_over_flexmoe", "fastermoe_over_flexmoe", "static_over_fastermoe")),
             e["order"], ", ".join(f"{k} {v:.1f}" for k, v in e["ops"].items() if v) or "none", f"{e['mean_shadowed']:.2f}"]
            for e in sim_summary.values()]
    return ["## 2. Placement policies on the traces: MODELLED step time (not measured)", text,
            Table(header, rows, note="Every number in this section is an output of the model."),
            Figure("simulation.png", draw=lambda: draw(plot_simulation(sim_summary)), caption="simulation", dpi=110)]


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
            Figure("replica_a2a.png", draw=lambda: draw(plot_a2a(a2a_raw)), caption="replica_a2a", dpi=110)]


def plot_premise(records: dict[str, dict[str, Any]], folder: Path) -> Plot:
    from replications.flexmoe import stats

    imbalance, tv = [], []
    for name, r in records.items():
        curves, tvs = [], []
        window = int(r["config"]["paper"]["protocol"]["window"])
        for run in r["runs"]:
            loads = np.load(folder / "traces" / run["train"]["trace"])["routed"].sum(2).astype(float)  # [steps, L, E]
            curves.append((loads.max(-1) / loads.mean(-1)).mean(1))
            w = [stats.windows(loads[:, i], window) for i in range(loads.shape[1])]
            tvs.append(np.mean([stats.tv_distance(x[:-1], x[1:]) for x in w], axis=0))
        smooth = np.convolve(np.mean(curves, axis=0), np.ones(5) / 5, mode="valid")
        imbalance.append(Series(name, np.arange(len(smooth)) + 3, smooth))
        tv.append(Series(name, np.arange(1, len(tvs[0]) + 1) * window, np.mean(tvs, axis=0)))
    first = next(iter(records.values()))
    run = first["runs"][0]
    loads = np.load(folder / "traces" / run["train"]["trace"])["routed"].sum(2)[:, 0].astype(float)
    w = stats.shares(stats.windows(loads, int(first["config"]["paper"]["protocol"]["window"])))
    return Plot([Panel("imbalance per step (max/mean load; 5-step mean)", "optimiser step", "max / mean", imbalance),
                 Panel("TV distance between consecutive windows", "optimiser step", "TV", tv),
                 Panel(f"{first['model']} seed {run['seed']} layer 0: load share per window", "window", "expert",
                       heatmap=Heatmap(w.T, aspect="auto", colorbar=True))], panel_size=(16 / 3, 4.2))


def plot_simulation(sim_summary: dict[str, Any]) -> Plot:
    def panel(link: str) -> Panel:
        entries = [e for e in sim_summary.values() if e["link"] == link]
        return Panel(f"MODELLED speed-up over static, link {link}", ylabel="static time / policy time",
                     bars=[Bars(name, [e["mean_ms"]["static"] / e["mean_ms"][p] for e in entries])
                           for p, name in POLICY_NAMES.items()],
                     categories=[e["model"] for e in entries], hlines=[Rule(1.0)], legend=7 if link == links[0] else None)

    links = sorted({e["link"] for e in sim_summary.values()})
    return Plot([panel(link) for link in links], panel_size=(5.5, 4.2))


def plot_a2a(a2a_raw: dict[str, Any]) -> Plot:
    shares = sorted({r["hot_share"] for r in a2a_raw["rows"]})
    by = {(r["placement"], r["hot_share"]): r for r in a2a_raw["rows"]}
    return Plot([Panel("MEASURED dispatch + combine on the 2 x 2 testbed", "share of tokens to expert 0", "median ms",
                       bars=[Bars(n, [by[n, h]["median_ms"] for h in shares]) for n in a2a_raw["placements"]],
                       categories=[f"{h:.2f}" for h in shares], legend=10)], panel_size=(6, 4))


def build(results: PaperResults) -> PaperReport | None:
    """The page from the wikitext2 and tinyshakespeare records (None without either), their traces and the side
    files where present."""
    records, ts = ordered(results, DATASET, ORDER), ordered(results, "tinyshakespeare", ORDER)
    if not records and not ts:
        return None
    sim, a2a_raw = results.side_file("simulation.json"), results.side_file("replica_a2a.json")
    sim_summary = simulation_summary(sim)
    a2a = a2a_check(a2a_raw)
    claims = paper_claims(PAPER, results)
    any_r = next(iter((records or ts).values()))
    seeds = len(any_r["runs"])
    window = any_r["config"]["paper"]["protocol"]["window"]
    intro = ("Traces: the shared WikiText-2 GPT-MoE (2 MoE layers, d 128; replications/moe/lm.py), every step's "
             f"routed token-expert choices per expert (before capacity drops), {seeds} seed(s) per setting "
             f"(replications/flexmoe/train.py). Windows of {window} steps; TV = total-variation distance between "
             "consecutive windows' load shares; noise floor = the same distance for two multinomial draws from one "
             "share vector (replications/flexmoe/stats.py). Mean ± std over seeds, mean over the two layers; the "
             "claims judge the second half of each run (paper.yaml `window`).")
    if ts:
        intro += (" The premise also on character-level Tiny Shakespeare (4 MoE layers, d 128; mean over its four "
                  "layers), beside WikiText-2's, each verdict naming its scale.")
    folder = results.folder
    blocks: list[Any] = ["# FlexMoE on CPU: routing traces, a placement simulator (modelled), a replicated expert "
                         "(measured)", intro]
    blocks += premise_blocks(records, folder) if records else ["## 1. The premise, measured", "WikiText-2: no complete records."]
    blocks += char_premise_blocks(ts, folder) if ts else [f"Tiny Shakespeare (character level): not run yet ({RUN_TS})."]
    if sim is not None:
        blocks += simulation_blocks(sim, sim_summary)
    blocks += a2a_blocks(a2a_raw, a2a)
    blocks += ["## How each claim was tested",
               Table(["claim", "tested as"], [[s.short, s.notes or s.not_testable] for s in load_claims(PAPER)],
                     note="The rule and the measured effect of each are under Verdicts."),
               hardware_line(any_r["environment"]["hardware"], "shared 2-core machine")]
    return PaperReport(blocks=blocks, claims=claims, data={"simulation_summary": sim_summary, "testbed": a2a})
