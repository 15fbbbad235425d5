"""TA-MoE's page as data (``build``): the table, the claim checks and the dispatch figure.

Reads the wikitext2 records (the runner's, with every step's dispatch matrix) and, when they exist, the side
files the replay wrote beside them (replay.json, links.json: replications/ta_moe/replay.py). Claims are
checked for direction with per-seed paired differences (same seed = same data order and init) and 95%
Student-t intervals, and the replay by a bootstrap interval of the ratio of mean all-to-all times; every
status comes from shared.verdict. Where Tiny Shakespeare records exist, its accuracy and ladder claims are judged
beside WikiText-2's (charclaims.py: validation loss in nats/char, the character bigram floor as precondition) and
the page gains that dataset's table and dispatch figure.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from scipy import stats as scipy_stats

from replications.moe import charfloor
from replications.ta_moe import charclaims
from replications.ta_moe.train import mean_dispatch
from shared.paper_report import Claim, Figure, PaperReport, PaperResults, Table
from shared.stats import percentile_interval, resample_indices
from shared.verdict import CONTRADICTED, INCONCLUSIVE, NOT_RUN, NOT_TESTABLE, direction_status

PAPER = Path(__file__).with_name("paper.yaml")
DATASET = "wikitext2"
ORDER = ["ta_moe", "gshard", "fastermoe"]
ACCURACY_MARGIN = 0.02  # "no loss of accuracy": TA-MoE's test PPL at most 2% above GShard's (our tolerance)
LAST = 0.1  # the learnt pattern: the last 10% of training steps
BOOTSTRAP = 2000  # replicates of the replay's ratio of means


def per_seed(record: dict[str, Any], metric: str) -> dict[int, float]:
    return {run["seed"]: run["metrics"][metric] for run in record["runs"]}


def paired(a: dict[str, Any], b: dict[str, Any], metric: str) -> dict[str, Any] | None:
    """a - b per common seed: mean and 95% t interval (None below 2 seeds)."""
    sa, sb = per_seed(a, metric), per_seed(b, metric)
    seeds = sorted(set(sa) & set(sb))
    if len(seeds) < 2:
        return None
    d = np.array([sa[s] - sb[s] for s in seeds])
    half = scipy_stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    return {"seeds": seeds, "mean": float(d.mean()), "ci95": [float(d.mean() - half), float(d.mean() + half)],
            "per_seed": [float(v) for v in d]}


def learnt_dispatch(record: dict[str, Any]) -> list[list[float]]:
    """Mean [source][destination] kept assignments per step and layer over the last 10% of steps, all seeds."""
    mats = []
    for run in record["runs"]:
        dispatch = run["train"]["dispatch"]
        mats.append(mean_dispatch(dispatch[-max(1, int(len(dispatch) * LAST)):]))
    return np.mean(np.array(mats), axis=0).tolist()


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
                W = m.shape[0]
                node = np.arange(W) // rpn
                out = [m[node == n][:, node != n].sum() for n in range(W // rpn)]
                inn = [m[node != n][:, node == n].sum() for n in range(W // rpn)]
                link_bytes = max(out + inn) * width * 4
                times.append(2 * link_bytes * 8 / (links["inter"] * 1e6))
    return 1e3 * float(np.mean(times))


def replay_ratio(ta: list[float], gs: list[float], seed: int = 0) -> dict[str, Any]:
    """TA-MoE / GShard mean all-to-all time of the replayed dispatches: the ratio, its 95% percentile bootstrap
    interval (each arm resampled on its own: the matrices are not paired across arms), its status (the claim:
    below 1) and, for reference, the two-sided Mann-Whitney p."""
    x, y = np.asarray(ta, dtype=float), np.asarray(gs, dtype=float)
    rx = x[resample_indices(len(x), BOOTSTRAP, seed)].mean(axis=1)
    ry = y[resample_indices(len(y), BOOTSTRAP, seed + 1)].mean(axis=1)
    low, high = percentile_interval(rx / ry, 0.95)
    return {"ta_moe_mean_ms": 1e3 * float(x.mean()), "gshard_mean_ms": 1e3 * float(y.mean()),
            "ratio": float(x.mean() / y.mean()), "ratio_ci95": [low, high],
            "p_two_sided": float(scipy_stats.mannwhitneyu(x, y, alternative="two-sided").pvalue),
            "status": direction_status(low - 1, high - 1, claimed="negative")}


def replay_check(replay: dict[str, Any]) -> tuple[str, dict[int, dict[str, Any]]]:
    """The a2a claim's status and the per-width comparison: the widest messages (bandwidth-bound) decide, unless
    any width contradicts it; narrow ones are latency-bound on this testbed."""
    by = {(r["arm"], r["d_model"]): r for r in replay["rows"]}
    per_width = {w: replay_ratio(by["ta_moe", w]["seconds"], by["gshard", w]["seconds"])
                 for w in sorted({r["d_model"] for r in replay["rows"]})
                 if ("ta_moe", w) in by and ("gshard", w) in by}
    statuses = [v["status"] for v in per_width.values()]
    status = (CONTRADICTED if CONTRADICTED in statuses else per_width[max(per_width)]["status"] if per_width
              else NOT_RUN)
    return status, per_width


def _difference(d: dict[str, Any], what: str) -> str:
    return f"{what} TA - GShard = {d['mean']:.3f} [{d['ci95'][0]:.3f}, {d['ci95'][1]:.3f}] (95% t, paired by seed)"


def claim_checks(records: dict[str, dict[str, Any]], replay: dict[str, Any] | None,
                 links: dict[str, float] | None = None) -> tuple[list[Claim], dict[str, dict[str, Any]]]:
    """One Claim per paper.yaml claim, and the numbers behind each (by claim id)."""
    paper = yaml.safe_load(PAPER.read_text())
    ta, gs = records.get("ta_moe"), records.get("gshard")
    claims, details = [], {}
    for claim in paper["claims"]:
        base = {"text": claim["text"], "kind": claim["kind"], "source": claim["source"], "verified": claim["verified"]}
        detail: dict[str, Any] = {"tested_as": claim["tested_as"]}
        details[claim["id"]] = detail
        if claim["id"] == "speedup":
            claims.append(Claim(**base, status=NOT_TESTABLE,
                                evidence="end-to-end multi-node GPU training throughput; see claim a2a for the mechanism"))
        elif ta is None or gs is None:
            claims.append(Claim(**base, status=NOT_RUN, evidence="no complete TA-MoE and GShard records"))
        elif claim["id"] == "accuracy":
            d = paired(ta, gs, "test_ppl")
            margin = ACCURACY_MARGIN * float(np.mean(list(per_seed(gs, "test_ppl").values())))
            detail.update(difference=d, margin=margin)
            if d is None:
                claims.append(Claim(**base, status=INCONCLUSIVE, evidence="fewer than 2 seeds common to both arms"))
                continue
            status = direction_status(*d["ci95"], claimed="none", margin=margin)
            evidence = (f"{_difference(d, 'test PPL')}; margin +{margin:.1f} (2% of GShard's mean)"
                        + ("; TA-MoE is worse than GShard (interval above 0), by more or less than the margin: "
                           "undecided" if status == INCONCLUSIVE and d["ci95"][0] > 0 else ""))
            claims.append(Claim(**base, status=status, evidence=evidence, effect=d["mean"],
                                interval=tuple(d["ci95"]), unit="test PPL, TA-MoE - GShard"))
        elif claim["id"] == "ladder":
            d = paired(ta, gs, "off_node_fraction_last10pct")
            detail["difference"] = d
            if d is None:
                claims.append(Claim(**base, status=INCONCLUSIVE, evidence="fewer than 2 seeds common to both arms"))
                continue
            claims.append(Claim(**base, status=direction_status(*d["ci95"], claimed="negative"),
                                evidence=_difference(d, "off-node share (last 10% of steps)"), effect=d["mean"],
                                interval=tuple(d["ci95"]), unit="off-node share, TA-MoE - GShard"))
        elif claim["id"] == "a2a":
            modelled = ""
            if links is not None:
                detail["modelled_ms_h1024"] = {arm: modelled_link_ms(r, links) for arm, r in records.items()}
                modelled = ("; modelled, not measured (bytes over the slowest node link / measured inter rate, "
                            "H=1024, dispatch + combine): "
                            + ", ".join(f"{a} {v:.1f} ms" for a, v in detail["modelled_ms_h1024"].items()))
            if replay is None:
                claims.append(Claim(**base, status=NOT_RUN, evidence="the replay (python -m replications.ta_moe.replay)"
                                    " has not run" + modelled))
                continue
            status, per_width = replay_check(replay)
            detail["replay"] = per_width
            measured = "; ".join(
                f"H={w}: TA {v['ta_moe_mean_ms']:.2f} ms vs GShard {v['gshard_mean_ms']:.2f} ms (x{v['ratio']:.2f} "
                f"[{v['ratio_ci95'][0]:.2f}, {v['ratio_ci95'][1]:.2f}], p={v['p_two_sided']:.2g}): {v['status']}"
                for w, v in per_width.items())
            widest = per_width.get(max(per_width)) if per_width else None
            claims.append(Claim(
                **base, status=status,
                evidence=f"ratio TA / GShard of the replayed all-to-all time, 95% bootstrap interval; {measured}; "
                         f"the widest messages decide{modelled}",
                effect=widest["ratio"] if widest else None,
                interval=tuple(widest["ratio_ci95"]) if widest else None,
                unit=f"x (TA-MoE / GShard all-to-all time, H={max(per_width)})" if widest else ""))
        else:
            raise ValueError(f"ta_moe paper.yaml: no check for claim '{claim['id']}'")
    return claims, details


def fmt_ci(a: dict[str, float], digits: int = 1) -> str:
    return (f"{a['mean']:.{digits}f} ± {a['std']:.{digits}f} "
            f"[{a['ci95_low']:.{digits}f}, {a['ci95_high']:.{digits}f}]")


def main_table(records: dict[str, dict[str, Any]]) -> Table:
    header = ["model", "valid PPL (mean ± std) [95% CI]", "test PPL (mean ± std) [95% CI]",
              "off-node share, last 10% of steps", "off-node share, all steps", "to own rank", "dropped",
              "train tokens/s", "seeds", "wall time"]
    rows = []
    for name, r in records.items():
        a = r["aggregate"]
        rows.append([name, fmt_ci(a["valid_ppl"]), fmt_ci(a["test_ppl"]), fmt_ci(a["off_node_fraction_last10pct"], 3),
                     f"{a['off_node_fraction']['mean']:.3f}", f"{a['local_rank_fraction']['mean']:.3f}",
                     f"{a['dropped_fraction']['mean']:.3f}", f"{a['train_tokens_per_s']['mean']:.0f}",
                     a["test_ppl"]["n"], f"{r['wall_seconds'] / 60:.1f} min"])
    note = ("Off-node share: kept token-expert assignments whose expert is on the other node (uniform "
            "routing: 0.5). Dropped: share of top-2 selections over the official capacity ceil(1.2 S) per expert "
            "(with one expert per rank and top-2 the mean load is 2 S, so the official rule drops ~40% in every "
            "arm that has it; FasterMoE's gate has no capacity). The rule fills each expert from source ranks in "
            "rank order, so the drops fall on the last ranks: per-rank shares in wikitext2_dispatch.png "
            "(GShard: rank 3 keeps nothing; TA-MoE: the second rank of each node loses most).")
    return Table(header, rows, note=note)


def replay_blocks(replay: dict[str, Any], cluster: dict[str, Any]) -> list[Any]:
    tb = replay["testbed"]
    text = (f"All-to-all replay (a replay of the recorded dispatch, not training): "
            f"{tb['nodes']} nodes x {tb['ranks_per_node']} gloo ranks in network namespaces, inter-node links "
            f"shaped to {tb['inter_rate_mbit']:.0f} Mbit/s, intra-node loopback; the last "
            f"{replay['steps_per_seed']} steps of every seed, both layers, dispatch + combine "
            "(replay.json). Measured link rates on the testbed (16 MiB ping-pong): intra "
            f"{replay['measured_mbit']['intra']:.0f} Mbit/s, inter {replay['measured_mbit']['inter']:.0f} Mbit/s "
            f"(the training's topology matrix used intra {cluster['intra_mbit']:.0f} / inter "
            f"{cluster['inter_mbit']:.0f}, source: {cluster['source']}).")
    rows = [[row["arm"], row["d_model"], row["matrices"], f"{row['mean_ms']:.2f}", f"{row['median_ms']:.2f}"]
            for row in replay["rows"]]
    return [text, Table(["arm", "values per token", "recorded dispatches", "mean ms", "median ms"], rows)]


def plot(records: dict[str, dict[str, Any]], dataset: str = DATASET) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(records) + 1, figsize=(4.8 * (len(records) + 1), 4.0))
    for ax, (name, r) in zip(axes, records.items()):
        m = np.array(learnt_dispatch(r))
        p = r["config"]["paper"]["protocol"]
        W = m.shape[0]
        selections = 2 * p["batch_size"] * p["seq_len"] / W  # every arm routes each token to 2 experts
        share = m / selections  # the rest of each row was dropped by the capacity rule
        ax.imshow(share, cmap="viridis", vmin=0, vmax=0.5)
        for i in range(W):
            for j in range(W):
                ax.text(j, i, f"{share[i, j]:.2f}", ha="center", va="center", color="w" if share[i, j] < 0.3 else "k")
        ax.set(title=f"{name}: kept share of each rank's top-2", xlabel="destination rank",
               xticks=range(W), yticks=range(W),
               yticklabels=[f"{i} ({1 - share[i].sum():.0%} dropped)" for i in range(W)])
        ax.set_ylabel("source rank")
        ax.axhline(W / 2 - 0.5, color="r", lw=0.8)
        ax.axvline(W / 2 - 0.5, color="r", lw=0.8)
    ax = axes[-1]
    for name, r in records.items():
        rpn = r["config"]["paper"]["protocol"]["cluster"]["ranks_per_node"]
        curves = []
        for run in r["runs"]:
            t = np.array(run["train"]["dispatch"], dtype=float)  # [entries, layers, W, W]: a step, or a window's mean
            W = t.shape[-1]
            off = np.array([[i // rpn != j // rpn for j in range(W)] for i in range(W)])
            curves.append((t * off).sum(axis=(1, 2, 3)) / t.sum(axis=(1, 2, 3)))
        window = r["runs"][0]["train"].get("dispatch_window", 1)
        steps = np.minimum(np.arange(1, len(curves[0]) + 1) * window, r["runs"][0]["train"].get("steps", np.inf))
        ax.plot(steps, np.mean(curves, axis=0), label=name)
    per_step = all(r["runs"][0]["train"].get("dispatch_window", 1) == 1 for r in records.values())
    ax.set(title=f"off-node share per {'step' if per_step else 'window'} (seeds' mean)",
           xlabel="optimiser step" if per_step else "optimiser step (end of the window)", ylabel="off-node share")
    ax.axhline(0.5, color="grey", ls=":", lw=0.8)
    ax.legend()
    fig.suptitle(f"{dataset}: dispatch over the emulated 2 x 2 cluster, last 10% of steps (red lines: node boundary)")
    fig.tight_layout()
    return fig


def char_part(chars: dict[str, dict[str, Any]], floor: float | None) -> tuple[list[Any], list[Claim], dict[str, Any]]:
    """Tiny Shakespeare's blocks, its two Claims and their data (charclaims.py)."""
    paper = yaml.safe_load(PAPER.read_text())
    claims, checks = charclaims.claim_checks(paper["claims"], chars.get("ta_moe"), chars.get("gshard"), paired, floor)
    blocks = ["## Character-level Tiny Shakespeare (nanoGPT's CPU configuration, every FFN an MoE layer)",
              f"The same emulated cluster and gates; {checks['scale']}. Claims judged here: accuracy (validation "
              f"loss, margin +{charclaims.ACCURACY_MARGIN_NATS:.4f} nats/char) and ladder, only when every run of both "
              "arms ends below the character bigram (otherwise not testable here); their verdicts are under Verdicts, "
              "marked (Tiny Shakespeare).",
              charclaims.table(chars, floor),
              Figure(f"{charclaims.DATASET}_dispatch.png", draw=lambda: plot(chars, charclaims.DATASET),
                     caption=f"{charclaims.DATASET}_dispatch", dpi=120)]
    data = {"checks": checks,
            "aggregate": {name: {k: r["aggregate"][k] for k in ("valid_loss", "valid_ppl", "off_node_fraction",
                                                                 "off_node_fraction_last10pct", "local_rank_fraction",
                                                                 "dropped_fraction", "train_tokens_per_s")}
                          for name, r in chars.items()},
            "dispatch": {"what": "mean kept token-expert assignments per step and MoE layer, [source rank]"
                                 "[destination rank], last 10% of training steps, mean over seeds",
                         "arms": {name: learnt_dispatch(r) for name, r in chars.items()}}}
    return blocks, claims, data


def build(results: PaperResults, floor: Callable[[], float | None] = charfloor.bigram_floor) -> PaperReport | None:
    """The page from the wikitext2 records (None without any), the replay's side files where present, and the
    Tiny Shakespeare records where present (`floor`: the character bigram's validation loss, read from the data)."""
    found = results.models(DATASET)
    records = {name: found[name] for name in ORDER if name in found}
    found_chars = results.models(charclaims.DATASET)
    chars = {name: found_chars[name] for name in ORDER if name in found_chars}
    if not records:
        return None
    replay = results.side_file("replay.json")
    links_file = results.side_file("links.json")
    links = links_file["measured_mbit"] if links_file else None
    claims, details = claim_checks(records, replay, links)
    char_blocks, char_claims, char_data = char_part(chars, floor()) if chars else ([], [], None)
    any_r = next(iter(records.values()))
    cluster = any_r["runs"][0]["train"]["cluster"]
    hw = any_r["environment"]["hardware"]
    intro = ("Routing as if expert-parallel over an emulated 2 nodes x 2 ranks cluster (one expert per rank, "
             "rank-local gates as the official run trains them); trained in one process "
             "(replications/ta_moe/train.py). Topology matrix T_ij = -log(B_ij / max B) from link bandwidths "
             f"intra {cluster['intra_mbit']:.0f} Mbit/s, inter {cluster['inter_mbit']:.0f} Mbit/s "
             f"(source: {cluster['source']}; replications/ta_moe/topology.py).")
    paper = yaml.safe_load(PAPER.read_text())
    tested = Table(["claim", "tested as"], [[c["text"], c["tested_as"]] for c in paper["claims"]],
                   note="The measured effect of each is under Verdicts; the numbers behind it in claims.json "
                        "(data.checks).")
    blocks: list[Any] = ["# TA-MoE vs GShard loss vs FasterMoE's topology gate on WikiText-2 (small GPT-MoE, CPU)",
                         intro, main_table(records),
                         "## How each claim was tested (direction only; no number of the paper applies to this "
                         "protocol)", tested]
    if replay is not None:
        blocks += ["## All-to-all replay", *replay_blocks(replay, cluster)]
    blocks += [f"Hardware: {hw['cpu']}, {hw['torch_threads']} torch thread(s) per run, shared machine. "
               "Dispatch matrices: wikitext2_dispatch.png, their numbers in claims.json (data.dispatch); every "
               "step's matrices are in the result files (runs[].train.dispatch).",
               Figure("wikitext2_dispatch.png", draw=lambda: plot(records), caption="wikitext2_dispatch", dpi=120),
               *char_blocks]
    data = {"checks": details,
            "aggregate": {name: {k: r["aggregate"][k] for k in ("valid_ppl", "test_ppl", "off_node_fraction",
                                                                 "off_node_fraction_last10pct", "local_rank_fraction",
                                                                 "dropped_fraction", "train_tokens_per_s")}
                          for name, r in records.items()},
            "dispatch": {"what": "mean kept token-expert assignments per step and MoE layer, [source rank]"
                                 "[destination rank], last 10% of training steps, mean over seeds",
                         "arms": {name: learnt_dispatch(r) for name, r in records.items()}}}
    if char_data is not None:
        data[charclaims.DATASET] = char_data
    return PaperReport(blocks=blocks, claims=claims + char_claims, data=data)
