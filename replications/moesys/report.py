"""MoESys' page as data (``build``): ring-memory inference, measured beside modelled throughput (and on a GPU where
gpu_ring.py's measurement was committed), and the elastic run; the claims are paper.yaml's, judged by shared.claims
(the mechanisms by measures.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replications.moesys.measures import DATASET, paired_ratios
from shared.claims import paper_claims
from shared.report.blocks import commit_text, minutes, num
from shared.report.figures import Panel, Plot, Rule, Series, curve_series, draw
from shared.report.paper_hook import Block, Figure, PaperReport, PaperResults, Table

PAPER = Path(__file__).with_name("paper.yaml")
MODELS = ("ring_memory", "elastic")
GPU_GLOB = "gpu/ring_*.json"  # what gpu_ring.py writes, copied beside the results to be committed


def _train(record: dict[str, Any]) -> dict[str, Any]:
    return record["runs"][0]["train"]


def ring_blocks(train: dict[str, Any]) -> list[Block]:
    """Per setting: a caption with the measured per-section times and the table of configurations."""
    blocks: list[Block] = []
    header = ["configuration", "storage", "measured tokens/s", "modelled tokens/s", "measured / modelled",
              "loads per pass", "read GB/s (measured)"]
    for s in train["settings"]:
        compute = sum(s["compute_per_section_s"]) / len(s["compute_per_section_s"])
        loads = {k: sum(v) / len(v) for k, v in s["load_per_section_s"].items()}
        res = next(r["seconds_all"] for r in s["rows"] if r["k"] is None)
        blocks.append(f"**batch {s['batch']} x {s['seq_len']} tokens per pass, {s['passes']} passes** "
                      f"(measured per section: compute {compute * 1e3:.1f} ms; load alone "
                      + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in loads.items())
                      + f"; the resident runs' repeats took {min(res):.2f} to {max(res):.2f} s, a spread of "
                      f"{max(res) / min(res):.1f}x: the noise the machine's other processes put on every row)")
        blocks.append(Table(header, [
            [r["config"], r["storage"] or "-", f"{r['tokens_per_s']:.0f}", num(r["modelled_tokens_per_s"], 0, "-"),
             num(r["tokens_per_s"] / r["modelled_tokens_per_s"] if r["modelled_tokens_per_s"] else None, 2, "-"),
             num(r.get("loads_per_pass"), 1, "-"), num(r.get("read_gb_per_s"), 2, "-")] for r in s["rows"]]))
    return blocks


def plot_ring(train: dict[str, Any]) -> Plot:
    def panel(s: dict[str, Any], first: bool) -> Panel:
        series = []
        for storage, colour in (("storage", "tab:red"), ("page_cache", "tab:blue"), ("host", "tab:green")):
            rows = [r for r in s["rows"] if r["storage"] == storage]
            series += [curve_series(f"{storage} (measured)", rows, "k", "tokens_per_s", "o-", colour),
                       curve_series(f"{storage} (modelled)", rows, "k", "modelled_tokens_per_s", "x--", colour,
                                    alpha=0.7)] if rows else []
        resident = next(r for r in s["rows"] if r["k"] is None)
        return Panel(f"batch {s['batch']} x {s['seq_len']}", "slots k (k = 1: load-then-compute)", "tokens / s", series,
                     hlines=[Rule(resident["tokens_per_s"], "fully resident (measured)", "k", lw=1)],
                     xticks=sorted({r["k"] for r in s["rows"] if r["k"]}), ylim=(0, None), legend=7 if first else None)

    return Plot([panel(s, i == 0) for i, s in enumerate(train["settings"])], panel_size=(4.6, 3.8), suptitle_size=9,
                suptitle="Ring-memory inference on CPU: measured (solid) vs modelled sum_i max(compute_i, load_i+k-1) (dashed)")


def plot_elastic(t: dict[str, Any]) -> Plot:
    series = [Series("uninterrupted, 1 process", [r["step"] for r in t["curve"]], t["reference_loss"], "k-", lw=3, alpha=0.3)]
    for world, marker in ((2, "o"), (1, "s")):
        pts = [r for r in t["curve"] if r["world"] == world]
        series += [curve_series(f"elastic run on {world} rank(s)", pts, "step", "loss", marker, ms=4)] if pts else []
    done = {(c["step"], c["time"]) for c in t["curve"]}
    redone = [r for r in t.get("rows", []) if (r["step"], r["time"]) not in done]
    series += [curve_series("steps later redone from a checkpoint", redone, "step", "loss", "x", "grey", ms=5)] if redone else []
    return Plot([Panel("Elastic EP training: a rank leaves and rejoins (torchrun, gloo)", "step", "training loss (nats/token)",
                       series, hlines=[Rule(t["chain_entropy"], "chain entropy (best possible)", "tab:green", ":", 1.5)],
                       legend=7)], panel_size=(7, 3.8))


def gpu_blocks(results: PaperResults) -> list[Block]:
    """The GPU ring measurement (gpu_ring.py's JSON, committed under results/moesys/gpu/) or that it was not run."""
    blocks: list[Block] = ["## Ring memory on a GPU (pinned host memory -> GPU slots, second CUDA stream)"]
    names = sorted(p.relative_to(results.folder).as_posix() for p in results.folder.glob(GPU_GLOB))
    if not names:
        return blocks + ["Prepared, **not run** (no GPU in the session that wrote it): "
                         "`python -m replications.moesys.gpu_ring` on one GPU, < 10 min "
                         "(replications/moesys/README.md)."]
    for name in names:
        g = results.side_file(name)
        blocks += [f"`{Path(name).name}`: {g['device']}, pinned host memory {g['pinned_host_memory']}, outputs "
                   f"{'bit-identical' if g['exact'] else 'DIFFER'}; {commit_text(g['environment'])}.",
                   *ring_blocks(g)]
    return blocks


def ring_section(record: dict[str, Any]) -> list[Block]:
    t, env = _train(record), record["environment"]
    return ["## Ring-memory inference (CPU: sections streamed from a file into k slots)",
            f"Model: {t['params']['layers']} blocks in {t['params']['sections']} sections of "
            f"{t['section_bytes'] / 1e6:.1f} MB (fp32), d_model {t['params']['d_model']}, "
            f"{t['params']['num_experts']} experts of hidden {t['params']['ffn_hidden']}, top-1 gate; "
            "embedding and head stay resident. Outputs of every ring run "
            f"{'were bit-identical to' if t['exact'] else 'DIFFERED from'} the fully resident model's.",
            "*Measured*: wall time of the whole run (median of the repeats). *Modelled*: the fact sheet's "
            "formula with the measured per-section times, k = 1: sum(compute_i + load_i); k >= 2: "
            "sum_i max(compute_i, load_(i+k-1)) (plus the resident embedding/head time). "
            "*storage*: each section's pages are evicted from the page cache before the run and after "
            "each read (posix_fadvise DONTNEED; after the runs fincore found "
            f"{t.get('page_cache_bytes_after_drop')} of {t.get('file_bytes')} bytes cached), so every "
            "load reads the disk (here a virtio block device; the host may cache it). *page_cache*: the "
            "file stays cached, so a load is a kernel memory copy, the CPU stand-in for a pinned host -> "
            "GPU copy. The loader is one thread on the second core; compute uses 1 torch thread. The "
            "model assumes the compute and the loads each have a core and the memory bus to themselves; "
            "measured runs fall short of it where they compete with each other and with other processes "
            "(the load average below counts the whole shared machine).",
            *ring_blocks(t),
            f"Hardware: {env['hardware']['cpu']}, {env['hardware']['cpu_count']} cores; load average "
            f"{t['load_average_before']} before, {t['load_average_after']} after (1/5/15 min). "
            f"Command `{env['command']}` at {commit_text(env)}; torch {env['versions'].get('torch')}; "
            f"wall {minutes(record['wall_seconds'])}.",
            Figure("ring_throughput.png", draw=lambda: draw(plot_ring(t)), caption="ring throughput", dpi=110)]


def elastic_section(record: dict[str, Any]) -> list[Block]:
    t, env = _train(record), record["environment"]
    e = record["config"]["paper"]["protocol"]["elastic"]
    return ["## Elastic expert-parallel training (torchrun, c10d rendezvous, `--nnodes=1:2`, gloo)",
            f"{t['params']['steps']} steps of a {t['params']['model']['layers']}-block GPT-MoE with "
            f"{t['params']['model']['num_experts']} experts (split over the ranks) on the planted chain. Two "
            f"agents of one worker each; agent B is killed (SIGKILL) after step >= {e['leave_at']} on 2 ranks and "
            f"started again after step {e['rejoin_at']} on 1 rank. World sizes: "
            f"{' -> '.join(map(str, t['phases']))}; largest |loss - uninterrupted loss| over the steps: "
            f"{t['max_abs_diff']:.2e}. Resumes (restart count, from step, world size, saved by world size): "
            f"{t['resumes']}. Loss {t['curve'][0]['loss']:.3f} -> {t['curve'][-1]['loss']:.3f} nats "
            f"(uniform {t['uniform_loss']:.3f}, chain entropy {t['chain_entropy']:.3f}). Wall time "
            f"{t.get('seconds', record['wall_seconds']):.0f} s, mostly process start-up and rendezvous on a shared "
            "2-core machine.",
            f"Command `{env['command']}` at {commit_text(env)}.",
            Figure("elastic_curve.png", draw=lambda: draw(plot_elastic(t)), caption="elastic curve", dpi=110)]


def data_of(records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The numbers behind the page, for claims.json: the ring rows and paired ratios, the elastic run's world sizes
    and loss difference."""
    out: dict[str, Any] = {}
    if "ring_memory" in records:
        t = _train(records["ring_memory"])
        out["ring"] = {"exact": t["exact"], "ring_k2_paired_ratios": paired_ratios(t["settings"][0]["rows"]),
                       "settings": [{"batch": s["batch"], "seq_len": s["seq_len"],
                                     "rows": [{k: r.get(k) for k in ("config", "storage", "k", "tokens_per_s",
                                                                     "modelled_tokens_per_s", "read_gb_per_s")}
                                              for r in s["rows"]]} for s in t["settings"]]}
    if "elastic" in records:
        t = _train(records["elastic"])
        out["elastic"] = {k: t[k] for k in ("phases", "max_abs_diff", "resumes")}
    return out


def build(results: PaperResults) -> PaperReport:
    """The page from the markov_tokens records (either may be missing: its claim is then 'not run')."""
    records = {m: r for m, r in results.models(DATASET).items() if m in MODELS}
    blocks: list[Block] = [
        "# MoESys / SE-MoE (arXiv 2205.10034): ring-memory inference and elastic training",
        "Generated from the result records by `make report` (and after `make replicate-moesys`) through "
        "`REPLICATION.report()` (replications/moesys/report.py); do not edit by hand.",
        "**What this is.** The mechanisms, measured on a CPU. The paper's headline numbers (+33% training and "
        "+13% inference throughput over DeepSpeed, UFO +64%) cannot be re-obtained without its GPU clusters "
        "and DeepSpeed baselines: none is re-measured here, and no modelled number stands in for one. The "
        "ring-memory schedule is the fact sheet's labelled RECONSTRUCTION (the released code was not found)."]
    if "ring_memory" in records:
        blocks += ring_section(records["ring_memory"])
    blocks += gpu_blocks(results)
    if "elastic" in records:
        blocks += elastic_section(records["elastic"])
    return PaperReport(blocks=blocks, claims=paper_claims(PAPER, results), data=data_of(records))
