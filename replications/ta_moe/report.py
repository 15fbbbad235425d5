"""TA-MoE's page as data (``build``): its verdicts, judged from paper.yaml's claim specs by shared.claims (the replay's
ratio in measures.py), and per dataset the table and the dispatch figure; the replay's table where replay.py wrote
replay.json beside the records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from replications.moe import charfloor
from replications.ta_moe.measures import learnt_dispatch
from shared.claims import paper_claims
from shared.report.blocks import CHAR_SECTION, CHAR_VALIDATION, hardware_line, ordered
from shared.report.columns import MODEL, SEEDS, WALL, agg_column, char_columns, char_floor_row, column_table, mean_column
from shared.report.figures import Heatmap, Panel, Plot, Rule, Series, draw
from shared.report.paper_hook import Figure, PaperReport, PaperResults, Table

PAPER = Path(__file__).with_name("paper.yaml")
DATASETS = ("wikitext2", "tinyshakespeare")
ORDER = ["ta_moe", "gshard", "fastermoe"]
AGGREGATES = ("valid_loss", "valid_ppl", "test_ppl", "off_node_fraction", "off_node_fraction_last10pct",
              "local_rank_fraction", "dropped_fraction", "train_tokens_per_s")


def table(records: dict[str, dict[str, Any]], floor: float | None = None) -> Table:
    """One row per arm: WikiText-2's PPLs, or (``floor`` given: Tiny Shakespeare) the loss and its distance to the
    character bigram floor; then the dispatch columns."""
    chars = floor is not None
    quality = char_columns(floor) if chars else [agg_column("valid PPL (mean ± std) [95% CI]", "valid_ppl", 1, ci=True),
                                                 agg_column("test PPL (mean ± std) [95% CI]", "test_ppl", 1, ci=True)]
    columns = [MODEL, *quality, agg_column("off-node share, last 10% of steps", "off_node_fraction_last10pct", 3, ci=True),
               mean_column("off-node share, all steps", "off_node_fraction", 3),
               mean_column("to own rank", "local_rank_fraction", 3), mean_column("dropped", "dropped_fraction", 3),
               mean_column("train tokens/s", "train_tokens_per_s", 0), SEEDS, WALL]
    if chars:
        return column_table(records.values(), columns, [char_floor_row(floor)], note=(
            f"{CHAR_VALIDATION} The records keep the mean dispatch of every 20 steps (paper.protocol.dispatch_window); "
            "the last 10% of steps are the last 10 of them."))
    return column_table(records.values(), columns, note=(
        "Off-node share: kept token-expert assignments whose expert is on the other node (uniform routing: 0.5). "
        "Dropped: share of top-2 selections over the official capacity ceil(1.2 S) per expert (with one expert per "
        "rank and top-2 the mean load is 2 S, so the official rule drops ~40% in every arm that has it; FasterMoE's "
        "gate has no capacity). The rule fills each expert from source ranks in rank order, so the drops fall on the "
        "last ranks: per-rank shares in wikitext2_dispatch.png (GShard: rank 3 keeps nothing; TA-MoE: the second "
        "rank of each node loses most)."))


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


def plot(records: dict[str, dict[str, Any]], dataset: str) -> Plot:
    panels = []
    for name, r in records.items():
        m = np.array(learnt_dispatch(r))
        p = r["config"]["paper"]["protocol"]
        W = m.shape[0]
        share = m / (2 * p["batch_size"] * p["seq_len"] / W)  # every arm routes each token to 2 experts; the rest dropped
        node = [Rule(W / 2 - 0.5, color="r")]
        panels.append(Panel(f"{name}: kept share of each rank's top-2", "destination rank", "source rank",
                            heatmap=Heatmap(share, vmin=0, vmax=0.5, annotate=".2f"), hlines=node, vlines=node, xticks=range(W),
                            yticklabels=[f"{i} ({1 - share[i].sum():.0%} dropped)" for i in range(W)]))
    curves = []
    for name, r in records.items():
        rpn = r["config"]["paper"]["protocol"]["cluster"]["ranks_per_node"]
        shares = []
        for run in r["runs"]:
            t = np.array(run["train"]["dispatch"], dtype=float)  # [entries, layers, W, W]: a step, or a window's mean
            W = t.shape[-1]
            off = np.array([[i // rpn != j // rpn for j in range(W)] for i in range(W)])
            shares.append((t * off).sum(axis=(1, 2, 3)) / t.sum(axis=(1, 2, 3)))
        window = r["runs"][0]["train"].get("dispatch_window", 1)
        steps = np.minimum(np.arange(1, len(shares[0]) + 1) * window, r["runs"][0]["train"].get("steps", np.inf))
        curves.append(Series(name, steps, np.mean(shares, axis=0)))
    per_step = all(r["runs"][0]["train"].get("dispatch_window", 1) == 1 for r in records.values())
    panels.append(Panel(f"off-node share per {'step' if per_step else 'window'} (seeds' mean)",
                        "optimiser step" if per_step else "optimiser step (end of the window)", "off-node share", curves,
                        hlines=[Rule(0.5, style=":")], legend=10))
    return Plot(panels, panel_size=(4.8, 4.0),
                suptitle=f"{dataset}: dispatch over the emulated 2 x 2 cluster, last 10% of steps (red lines: node boundary)")


def dataset_part(dataset: str, records: dict[str, dict[str, Any]]) -> tuple[list[Any], dict[str, Any]]:
    """One dataset's blocks (its table and dispatch figure) and data (aggregates, learnt dispatch)."""
    floor = charfloor.bigram_floor() if dataset == "tinyshakespeare" else None
    blocks: list[Any] = [] if floor is None else [
        CHAR_SECTION, "The same emulated cluster and gates, the TA loss and GShard arms at EvoMoE's GShard arm's active "
        "parameters. Its accuracy and ladder verdicts are judged only when every run of both arms ends "
        f"{charfloor.MARGIN_NATS:g} nats/char below the character bigram (replications/moe/charfloor.py), else not "
        "testable here."]
    blocks += [table(records, floor), Figure(f"{dataset}_dispatch.png", draw=lambda: draw(plot(records, dataset)),
                                             caption=f"{dataset}_dispatch", dpi=120)]
    data = {"aggregate": {name: {k: r["aggregate"][k] for k in AGGREGATES if k in r["aggregate"]}
                          for name, r in records.items()},
            "dispatch": {"what": "mean kept token-expert assignments per step and MoE layer, [source rank]"
                                 "[destination rank], last 10% of training steps, mean over seeds",
                         "arms": {name: learnt_dispatch(r) for name, r in records.items()}}}
    if floor is not None:
        data["bigram_valid_loss"] = floor
    return blocks, data


def build(results: PaperResults) -> PaperReport | None:
    """The page from the wikitext2 records (None without any), the replay's side file where present, and the Tiny
    Shakespeare records where present."""
    parts = {dataset: dataset_part(dataset, records) for dataset in DATASETS if (records := ordered(results, dataset, ORDER))}
    if "wikitext2" not in parts:
        return None
    any_r = next(iter(results.models("wikitext2").values()))
    cluster = any_r["runs"][0]["train"]["cluster"]
    hw = any_r["environment"]["hardware"]
    intro = ("Routing as if expert-parallel over an emulated 2 nodes x 2 ranks cluster (one expert per rank, "
             "rank-local gates as the official run trains them); trained in one process "
             "(replications/ta_moe/train.py). Topology matrix T_ij = -log(B_ij / max B) from link bandwidths "
             f"intra {cluster['intra_mbit']:.0f} Mbit/s, inter {cluster['inter_mbit']:.0f} Mbit/s "
             f"(source: {cluster['source']}; replications/ta_moe/topology.py). Every claim is judged for direction "
             "only (no number of the paper applies to this protocol): the rule and window of each are in paper.yaml.")
    wiki_blocks, data = parts.pop("wikitext2")
    blocks: list[Any] = ["# TA-MoE vs GShard loss vs FasterMoE's topology gate on WikiText-2 (small GPT-MoE, CPU)",
                         intro, wiki_blocks[0]]
    replay = results.side_file("replay.json")
    if replay is not None:
        blocks += ["## All-to-all replay", *replay_blocks(replay, cluster)]
    blocks += [hardware_line(hw) + " Dispatch matrices: wikitext2_dispatch.png, their numbers in claims.json "
               "(data.dispatch); every step's matrices are in the result files (runs[].train.dispatch).", *wiki_blocks[1:]]
    for dataset, (more, more_data) in parts.items():
        blocks += more
        data[dataset] = more_data
    return PaperReport(blocks=blocks, claims=paper_claims(PAPER, results), data=data)
