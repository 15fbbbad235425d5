"""REP's page as data (``build``): base models before and after REP, one row per (dataset, model) record, and the
measured cost of the base recipes from the side files the benchmarks wrote beside the results (budget/<dataset>_<model>.json,
bench_steps.json, bench_eval.json, bench_l1.json); the claims are paper.yaml's, judged by shared.claims.
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import mean
from typing import Any

from replications.rep.measures import base_verdicts, converged
from shared.claims import load_claims, paper_claims
from shared.report.blocks import agg_text, interval, mean_std
from shared.report.figures import Panel, Plot, Rule, Series, curve_series, draw
from shared.report.paper_hook import Figure, PaperReport, PaperResults, Table

PAPER = Path(__file__).with_name("paper.yaml")
METRICS = ("mrr", "hits1", "hits3", "hits10")
TITLE = "# REP: base KGE models before and after relation-based embedding propagation"
BUDGET = "budget"  # the folder of budget curves beside the results (python -m replications.rep.budget --out)


def base_label(record: dict[str, Any]) -> str:
    """What the base embeddings are: converged (where each seed stopped) or the toy CPU-sized run."""
    runs = record["runs"]
    if converged(record):
        return "converged: best val at epoch " + ", ".join(f"{r['train']['best_epoch']:.1f}" for r in runs)
    hp = ((record.get("config") or {}).get("model", {}).get("per_dataset") or {}).get(record["dataset"], {})
    commits = sorted({r["git_commit"][:7] for r in runs if r.get("git_commit")})
    at = f" (config at {', '.join(commits)})" if commits else ""  # no longer the committed recipe: name its code
    return f"toy: dim {hp.get('dim', '?')}, {runs[0]['train'].get('steps', '?')} steps{at}"


def row(record: dict[str, Any]) -> list[str]:
    agg, runs = record["aggregate"], record["runs"]
    rep = runs[0]["train"]["rep"]
    train_s = [r["train"]["train_seconds"] for r in runs]
    rep_s = [r["train"]["rep_seconds"] for r in runs]
    cells = [record["dataset"], record["model"], base_label(record),
             f"{rep['alpha']} / {rep['khop']}" + (" (deg)" if rep["neighbor_norm"] else "")]
    for m in METRICS:
        cells += [agg_text(agg[f"test_{m}_base"], 3), agg_text(agg[f"test_{m}_rep"], 3), f"{agg[f'test_{m}_delta']['mean']:+.3f}"]
    return cells + [agg_text(agg["val_mrr_base"], 3), agg_text(agg["val_mrr_rep"], 3), mean_std(train_s, 0),
                    mean_std(rep_s, 1), f"{100 * mean(rep_s) / mean(train_s):.1f}%", str(len(runs))]


def before_after(records: list[dict[str, Any]]) -> Table:
    head = ["dataset", "model", "base embeddings", "REP α / k"]
    for m in METRICS:
        head += [f"test {m} base", f"test {m} REP", f"Δ{m}"]
    head += ["val MRR base", "val MRR REP", "train s", "REP s", "REP/train", "seeds"]
    cut = [f"{r['dataset']}/{r['model']} (missing seeds {r['missing_seeds']})" for r in records if r.get("missing_seeds")]
    note = "Incomplete protocol (fewer seeds than conf/paper/rep.yaml lists): " + "; ".join(cut) + "." if cut else ""
    return Table(head, [row(r) for r in records], note=note)


def intro(records: list[dict[str, Any]]) -> str:
    cpus = ", ".join(sorted({r.get("environment", {}).get("hardware", {}).get("cpu", "?") for r in records}))
    return ("Produced by `make replicate-rep` (the page is `report()`, replications/rep/report.py); "
            f"CPU: {cpus}.\n"
            "Filtered ranking over head and tail prediction, ties = mean of optimistic and pessimistic rank (OGB).\n"
            "Mean ± std over seeds; Δ = REP − base (mean over seeds). Converged bases (DistMult, ComplEx: the kbc\n"
            "1-vs-all recipe, stopped on validation MRR, best-validation embeddings) are the ones REP's claim is\n"
            "judged on; toy bases (dim 64, 1000 steps: ~1% of the RotatE-repo training steps; an earlier CPU-sized\n"
            "config and negative-sampling weight, at the commit the row names) are far below the full-size\n"
            "references and REP's change on them says nothing about trained embeddings. REP α / k: the\n"
            "official per-dataset values (README); ComplEx uses DistMult's (no official entry). Times: wall seconds\n"
            "of base training and of REP itself, per seed.")


# --- the measured cost of the base recipes (side files of replications.rep.budget / bench_steps / bench_eval / bench_l1) ---

def _hours(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds / 3600:.2f}"


def curve_table(records: list[dict[str, Any]]) -> Table:
    rows = [[r["dataset"], r["model"], r["recipe"]["dim"], f"{last['epoch']:.2f} of {r['recipe']['epochs']}",
             _hours(last["train_cpu_seconds"]), f"{last['val_mrr']:.4f}", f"{last['test_mrr']:.4f}",
             f"{r['target']['test_mrr']} ({r['target']['kind']})", _hours(tt.get("seconds")), tt.get("how", "run not complete")]
            for r in records for last, tt in [(r["points"][-1], r.get("time_to_target", {}))]]
    return Table(["dataset", "model", "dim", "epochs run", "CPU h", "val MRR", "test MRR", "target (kind)",
                  "CPU h to target", "how"], rows)


def plot_curves(records: list[dict[str, Any]]) -> Plot:
    def panel(r: dict[str, Any]) -> Panel:
        hours = [p["train_cpu_seconds"] / 3600 for p in r["points"]]
        target = r["target"]["test_mrr"]
        return Panel(f"{r['dataset']} {r['model']} (dim {r['recipe']['dim']}, seed {r['seed']})",
                     "training CPU time (hours, 1 thread; evaluation excluded)", "filtered MRR",
                     [Series("validation MRR", hours, [p["val_mrr"] for p in r["points"]], "o-"),
                      Series("test MRR", hours, [p["test_mrr"] for p in r["points"]], "s--")],
                     hlines=[] if target is None else [Rule(target, f"target {target} ({r['target']['kind']})", "k", lw=1)],
                     legend_loc="lower right", grid=True)

    return Plot([panel(r) for r in records], panel_size=(5.2, 3.8))


def steps_blocks(b: dict[str, Any]) -> list[str | Table]:
    keys = ("dataset", "model", "recipe", "dim", "recipe_steps", "cpu_seconds_per_step", "recipe_cpu_hours")
    rows = [[x[k] for k in keys] for x in b["rows"]]
    return ["### Full recipe cost per seed (`python -m replications.rep.bench_steps`)",
            f"CPU time of one optimiser step ({b['steps_timed']} steps after 2 warm-up), times the recipe's step "
            f"count: training only, one core; commit {b['git_commit'][:7]}, {b['hardware']['cpu']}.",
            Table(["dataset", "model", "recipe", "dim", "steps", "CPU s / step", "CPU h per seed"], rows)]


def eval_blocks(b: dict[str, Any], l1: dict[str, Any] | None) -> list[str | Table]:
    rows = [[x["model"], x.get("distance") or "—", x["dim"], x["seconds_best"], x["how"], "yes" if x["under_target"] else "no"]
            for x in b["rows"] if not (l1 and x["model"] == "transe")]  # TransE: bench_l1.json times the L1 kernel
    note = f"TransE (pre-kernel) left out: superseded by bench_l1.json (L1 kernel, commit {l1['git_commit']:.7})." if l1 else ""
    return ["### Filtered evaluation of the FB15k-237 test set (`python -m replications.rep.bench_eval`)",
            f"40,932 filtered ranks against 14,541 entities, {b['threads']} thread(s), target < {b['target_seconds']:.0f} s; "
            f"commit {b['git_commit'][:7]}, {b['hardware']['cpu']}, semaphore: {b.get('semaphore', 'unknown')}; "
            f"load average {b.get('load_average_1_5_15min')}. Distance applies to TransE/RotatE only.",
            Table(["model", "distance", "dim", "seconds", "how", "< target"], rows, note=note)]


def l1_blocks(b: dict[str, Any]) -> list[str | Table]:
    s, p, a, yes = b["suite"], b["pykeen"], b["agreement"], {True: "yes", False: "no"}
    rows = [[n, x["wall_seconds"], x["cpu_seconds"], f"{x['test_triples_ranked']:,} of {b['test_triples']:,}", x["how"]]
            for n, x in ((f"suite: {s['evaluator']}, L1 {s['l1_backend']}", s), (f"PyKEEN {p['version']}: {p['evaluator']}", p))]
    return ["### TransE (L1) evaluation against PyKEEN (`python -m replications.rep.bench_l1`)",
            f"The whole FB15k-237 test set ({b['queries']:,} filtered ranks), {b['threads']} thread(s); embeddings: "
            f"{b['embeddings']['source']}. Commit {b['git_commit'][:7]}, {b['hardware']['cpu']}; "
            f"{b['exclusive']['how']}, load average {', '.join(f'{x:.2f}' for x in b['load_average_1_5_15min'])} (1/5/15 min).",
            Table(["evaluator", "wall s", "CPU s", "test triples timed", "how"], rows,
                  note=f"PyKEEN / suite: {b['ratio_pykeen_over_suite_wall']}x wall, {b['ratio_pykeen_over_suite_cpu']}x CPU; "
                       f"suite under the {b['target_seconds']:.0f} s target: {yes[b['suite_under_target']]}. Ranks: "
                       f"{a['ranks_compared']:,} compared (PyKEEN's timed triples, head + tail), {a['ranks_differing']} differ "
                       f"({a['ranks_with_ties']} with ties): identical: {yes[a['ranks_identical']]}."),
            *bound_line(b.get("kernel_vs_bound"))]


def bound_line(k: dict[str, Any] | None) -> list[str]:
    """The kernel's rate against the arithmetic bound bench_l1 measures on its own machine (issue 42: >= 0.8)."""
    if not k or "skipped" in k:
        return [f"Kernel against the arithmetic bound: not measured ({k['skipped']})."] if k else []
    low, high = k["kernel_over_bound_range"]
    return [f"Kernel against the arithmetic bound on this machine: {k['kernel_rate']} vs {k['bound_rate']} "
            f"{k['unit']} = **{k['kernel_over_bound']:.2f}** of the bound (range {low:.2f}-{high:.2f} over "
            f"{k['rounds']} interleaved rounds at {k['shape']['queries']} x {k['shape']['candidates']:,} x d "
            f"{k['shape']['dim']}; target {k['target']}: {'met' if k['meets_target'] else 'not met'}). Bound: {k['bound']}."]


def cost_blocks(results: PaperResults) -> tuple[list[Any], dict[str, Any]]:
    """The cost section (curves, per-step cost, evaluation time) from the side files present; with its data."""
    # the budget curve files (one seed each), by name; a curve still running (.partial.json) is left out
    budget = [json.loads(p.read_text()) for p in sorted((results.folder / BUDGET).glob("*.json"))
              if not p.name.endswith(".partial.json")]
    steps, ev, l1 = (results.side_file(f"bench_{n}.json") for n in ("steps", "eval", "l1"))
    if not (budget or steps or ev or l1):
        return [], {}
    blocks: list[Any] = [
        "## Base models: measured cost on this CPU",
        "From the side files beside the results (`python -m replications.rep.budget`, `bench_steps`, `bench_eval`, `bench_l1`, "
        "each given `--out results/rep/...`).\n"
        "CPU time is one thread's process time spent training (evaluation excluded) on the machine named in each\n"
        "file; on an idle core it equals wall time. Each curve is one seed of the committed recipe, cut at the\n"
        "training budget given; the MRRs are full filtered rankings of the validation and test sets. An\n"
        "extrapolation (a straight line in log CPU time through the last checkpoints) drawn while the curve is\n"
        "still steep cannot see its plateau: it is a lower bound on the time, not a forecast that the target is\n"
        "reached. Every curve here is one seed cut far short of the recipe's epochs: not a protocol result."]
    if budget:
        blocks += [Figure(f"{BUDGET}/budget.png", draw=lambda: draw(plot_curves(budget)), caption="curves", dpi=120),
                   curve_table(budget)]
    blocks += (steps_blocks(steps) if steps else []) + (eval_blocks(ev, l1) if ev else []) + (l1_blocks(l1) if l1 else [])
    data = {"budget": [{k: r.get(k) for k in ("dataset", "model", "seed", "recipe", "target", "time_to_target",
                                              "complete")} | {"last_point": r["points"][-1]} for r in budget],
            "bench_steps": steps["rows"] if steps else None, "bench_eval": ev["rows"] if ev else None,
            "bench_l1": {k: l1.get(k) for k in ("suite", "pykeen", "agreement", "git_commit", "kernel_vs_bound")}
            if l1 else None}
    return blocks, data


# --- the paper's claims (judged by shared.claims from paper.yaml; replications/rep/measures.py) ---

def verdict_table(rows: list[dict[str, Any]], margin: float) -> Table:
    cells = [[v["dataset"], v["model"], f"{v['base_test_mrr']:.4f}", f"{v['delta']:+.4f}",
              interval(*v["ci95"], 4, signed=True), v["interval"], v["effect"], v["status"]] for v in rows]
    return Table(["dataset", "model", "base test MRR", "Δ test MRR (REP − base)", "95% interval", "interval over",
                  "effect", "status"], cells,
                 title="REP on converged bases: the claim per (dataset, model)",
                 note=f"Status of 'improving or maintaining prediction quality': supported when the whole interval "
                      f"lies above −{margin} MRR (a loss smaller than that counts as maintaining; our margin), "
                      f"contradicted when it lies wholly below, else inconclusive.")


def plot_validation(records: list[dict[str, Any]]) -> Plot:
    """Each converged seed's validation-MRR curve (the early stopping's evaluations) and where it stopped."""
    return Plot([Panel(f"{r['dataset']} {r['model']}", "epoch", "filtered validation MRR",
                       [curve_series(f"seed {run['seed']}", run["train"]["validation"], "epoch", "val_mrr", ".-", lw=1)
                        for run in r["runs"]],
                       vlines=[Rule(run["train"]["best_epoch"], style=":") for run in r["runs"]],
                       legend_loc="lower right", grid=True) for r in records], panel_size=(4.6, 3.6))


def build(results: PaperResults) -> PaperReport | None:
    """The page from every complete record of the paper; None without any."""
    records = [results.records[k] for k in sorted(results.records)]
    if not records:
        return None
    table = before_after(records)
    cost, cost_data = cost_blocks(results)
    margin = next(s.judge["margin"] for s in load_claims(PAPER, "rep") if s.id == "improves_or_maintains")
    verdicts = base_verdicts(results, margin)
    blocks: list[Any] = [TITLE, intro(records)]
    if verdicts:
        blocks += [verdict_table(verdicts, margin),
                   Figure("validation_curves.png", draw=lambda: draw(plot_validation([r for r in records if converged(r)])),
                          caption="validation MRR of the converged bases per half epoch; dotted: the epoch kept", dpi=110)]
    blocks.append(table)
    data = {"before_after": {"header": table.header, "rows": table.rows}, "rep_on_converged_bases": verdicts, **cost_data}
    return PaperReport(blocks=[*blocks, *cost], claims=paper_claims(PAPER, results), data=data)
