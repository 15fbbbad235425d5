"""``python -m replications.rep.budget DATASET MODEL --minutes M``: the measured cost of a base-model recipe.

Trains one seed of ``conf/model/rep_<MODEL>.yaml`` (the 1-vs-all recipe) on DATASET for at most M minutes of
training (wall) time and, every ``--every`` epochs, ranks the full validation and test sets (filtered; outside the
timed training). Writes results/rep/budget/<dataset>_<model>.json after every checkpoint (``complete: false``
until the end), with the command, commit, hardware and versions. The cost axis is the process's CPU time spent
training (one thread, evaluation excluded): on a shared machine wall time measures the neighbours' load, CPU time
measures this recipe on this CPU (= wall time on an idle core). Then the CPU time to the test-MRR target
(paper.yaml's, the same the results page uses): measured where the curve reaches it, else extrapolated by a
straight line in log(training time) through the last points, labelled as such. ``--plot`` redraws the figure
from the JSON files only.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import Any

import torch

from replications.rep import REPLICATION, hparams
from replications.rep.evaluate import filtered_metrics
from replications.rep.train import fit_one_vs_all, steps_per_epoch
from shared.atomic import save_figure_atomic, write_json_atomic
from shared.reference import load_paper, reported_for
from shared.runinfo import environment, peak_memory_mb
from shared.runner import PROJECT_ROOT

OUT = PROJECT_ROOT / "results" / "rep" / "budget"
YEAR = 365 * 24 * 3600.0


def compose(dataset: str, model: str, overrides: list[str]):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(PROJECT_ROOT / "conf"), version_base="1.3"):
        return hydra_compose("config", overrides=["paper=rep", "tracker=none", f"dataset={dataset}",
                                                  f"model=rep_{model}", "device=cpu", *overrides])


def extrapolate(points: list[dict[str, Any]], target: float, last: int = 4, key: str = "train_cpu_seconds"
                ) -> dict[str, Any]:
    """Training seconds (``key``) at which test MRR reaches ``target``: measured, or a log-linear fit of the last points."""
    for p in points:
        if p["test_mrr"] >= target:
            return {"seconds": p[key], "how": "measured: first checkpoint at or above the target"}
    tail = [p for p in points if p[key] > 0][-last:]
    if len(tail) < 2:
        return {"seconds": None, "how": "too few checkpoints to extrapolate"}
    xs = [math.log(p[key]) for p in tail]
    ys = [p["test_mrr"] for p in tail]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    if slope <= 0:
        return {"seconds": None, "how": f"the last {len(tail)} checkpoints do not rise: no extrapolation"}
    log_seconds = mx + (target - my) / slope
    if log_seconds > math.log(YEAR):
        return {"seconds": None, "how": f"extrapolated beyond a year of training (slope {slope:.4f} per e-fold "
                                        f"through the last {len(tail)} checkpoints): not reachable at this rate"}
    seconds = math.exp(log_seconds)
    how = (f"extrapolated: test MRR linear in log(train seconds) through the last {len(tail)} checkpoints "
           f"(slope {slope:.4f} per e-fold)")
    return {"seconds": round(seconds, 1), "hours": round(seconds / 3600, 2), "how": how}


def measure(dataset: str, model: str, minutes: float, every: float, seed: int, overrides: list[str],
            out: Path) -> dict[str, Any]:
    torch.manual_seed(seed)
    cfg = compose(dataset, model, overrides)
    hp = hparams(cfg)
    data = REPLICATION.load_data(cfg)
    kge = REPLICATION.build_model(cfg, data)
    spe = steps_per_epoch(len(data.train), int(hp["batch_size"]))
    known = data.all_true()
    paper = load_paper(REPLICATION.paper_file)
    ref = reported_for(paper, dataset, model).get("test_mrr_base", {})
    record: dict[str, Any] = {
        "dataset": dataset, "model": model, "seed": seed, "recipe": hp, "steps_per_epoch": spe,
        "budget_minutes": minutes, "target": {"test_mrr": ref.get("value"), "kind": ref.get("kind"),
                                              "source": ref.get("source")},
        **environment(), "points": [], "complete": False,
    }
    from replications.rep import score_fn

    cpu = {"start": time.process_time(), "eval": 0.0}

    def checkpoint(step: int, train_seconds: float) -> bool:
        started, cpu_started = time.perf_counter(), time.process_time()
        train_cpu = cpu_started - cpu["start"] - cpu["eval"]
        with torch.no_grad():
            scores = score_fn(kge, kge.entity.detach())
            val = filtered_metrics(scores, data.valid, known)
            test = filtered_metrics(scores, data.test, known)
        cpu["eval"] += time.process_time() - cpu_started
        point = {"step": step, "epoch": round(step / spe, 3), "train_seconds": round(train_seconds, 1),
                 "train_cpu_seconds": round(train_cpu, 1),
                 "val_mrr": val["mrr"], "test_mrr": test["mrr"], "test_hits10": test["hits10"],
                 "eval_seconds": round(time.perf_counter() - started, 1)}
        record["points"].append(point)
        write_json_atomic(out, record)
        print(f"epoch {point['epoch']:.2f}  train {train_seconds / 60:.1f} min wall, {train_cpu / 60:.1f} min CPU  "
              f"val MRR {val['mrr']:.4f}  "
              f"test MRR {test['mrr']:.4f}", flush=True)
        return train_seconds >= minutes * 60

    every_steps = max(1, round(every * spe))
    checkpoint(0, 0.0)
    steps = int(hp["epochs"] * spe)
    fit_one_vs_all(kge, data.train, hparams_obj(hp), steps, seed, lambda m, s: None,
                   checkpoint=checkpoint, checkpoint_every=every_steps)
    if ref.get("value") is not None:
        record["time_to_target"] = extrapolate(record["points"], ref["value"])
    record["peak_memory_mb"] = round(peak_memory_mb(), 1)
    record["complete"] = True
    write_json_atomic(out, record)
    return record


def hparams_obj(hp: dict[str, Any]):
    from omegaconf import OmegaConf

    return OmegaConf.create(hp)


def plot(folder: Path) -> Path:
    import json

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    fig, axes = plt.subplots(1, max(1, len(records)), figsize=(5.2 * max(1, len(records)), 3.8), squeeze=False)
    for ax, r in zip(axes[0], records):
        hours = [p["train_cpu_seconds"] / 3600 for p in r["points"]]
        ax.plot(hours, [p["val_mrr"] for p in r["points"]], "o-", label="validation MRR")
        ax.plot(hours, [p["test_mrr"] for p in r["points"]], "s--", label="test MRR")
        target = r["target"]["test_mrr"]
        if target is not None:
            ax.axhline(target, color="k", lw=1, label=f"target {target} ({r['target']['kind']})")
        ax.set(title=f"{r['dataset']} {r['model']} (dim {r['recipe']['dim']}, seed {r['seed']})",
               xlabel="training CPU time (hours, 1 thread; evaluation excluded)", ylabel="filtered MRR")
        ax.legend(fontsize=8, loc="lower right")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    out = folder / "budget.png"
    save_figure_atomic(fig, out, dpi=120)
    return out


def _hours(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds / 3600:.2f}"


def readme(folder: Path) -> Path:
    """results/rep/budget/README.md from the curve files (and ../bench_steps.json, ../bench_eval.json if present)."""
    import json

    lines = ["# REP base models: measured cost on this CPU", "",
             "Generated by `python -m replications.rep.budget --plot` from the JSON files beside it; do not edit by hand.",
             "CPU time is one thread's process time spent training (evaluation excluded) on the machine named in each",
             "file; on an idle core it equals wall time. Each curve is one seed of the committed recipe, cut at the",
             "training budget given; the MRRs are full filtered rankings of the validation and test sets. An",
             "extrapolation (a straight line in log CPU time through the last checkpoints) drawn while the curve is",
             "still steep cannot see its plateau: it is a lower bound on the time, not a forecast that the target is",
             "reached. Every curve here is one seed cut far short of the recipe's epochs: not a protocol result.", "",
             "![curves](budget.png)", "",
             "| dataset | model | dim | epochs run | CPU h | val MRR | test MRR | target (kind) | CPU h to target | how |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for path in sorted(folder.glob("*.json")):
        r = json.loads(path.read_text())
        last, tt = r["points"][-1], r.get("time_to_target", {})
        lines.append(f"| {r['dataset']} | {r['model']} | {r['recipe']['dim']} | {last['epoch']:.2f} of "
                     f"{r['recipe']['epochs']} | {_hours(last['train_cpu_seconds'])} | {last['val_mrr']:.4f} | "
                     f"{last['test_mrr']:.4f} | {r['target']['test_mrr']} ({r['target']['kind']}) | "
                     f"{_hours(tt.get('seconds'))} | {tt.get('how', 'run not complete')} |")
    steps = folder.parent / "bench_steps.json"
    if steps.exists():
        b = json.loads(steps.read_text())
        lines += ["", "## Full recipe cost per seed (`python -m replications.rep.bench_steps`)", "",
                  f"CPU time of one optimiser step ({b['steps_timed']} steps after 2 warm-up), times the recipe's step "
                  f"count: training only, one core; commit {b['git_commit'][:7]}, {b['hardware']['cpu']}.", "",
                  "| dataset | model | recipe | dim | steps | CPU s / step | CPU h per seed |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {x['dataset']} | {x['model']} | {x['recipe']} | {x['dim']} | {x['recipe_steps']} | "
                  f"{x['cpu_seconds_per_step']} | {x['recipe_cpu_hours']} |" for x in b["rows"]]
    ev = folder.parent / "bench_eval.json"
    if ev.exists():
        b = json.loads(ev.read_text())
        lines += ["", "## Filtered evaluation of the FB15k-237 test set (`python -m replications.rep.bench_eval`)", "",
                  f"40,932 filtered ranks against 14,541 entities, {b['threads']} thread(s), "
                  f"target < {b['target_seconds']:.0f} s; "
                  f"commit {b['git_commit'][:7]}, {b['hardware']['cpu']}, semaphore: {b.get('semaphore', 'unknown')}; "
                  f"load average {b.get('load_average_1_5_15min')}. Distance applies to TransE/RotatE only.", "",
                  "| model | distance | dim | seconds | how | < target |", "| --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {x['model']} | {x.get('distance') or '—'} | {x['dim']} | {x['seconds_best']} | {x['how']} | "
                  f"{'yes' if x['under_target'] else 'no'} |" for x in b["rows"]]
    out = folder / "README.md"
    from shared.atomic import write_text_atomic

    write_text_atomic(out, "\n".join(lines) + "\n")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", nargs="?")
    ap.add_argument("model", nargs="?")
    ap.add_argument("--minutes", type=float, default=30.0, help="training-time budget (evaluation excluded)")
    ap.add_argument("--every", type=float, default=0.25, help="checkpoint every this many epochs")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--plot", action="store_true", help="only redraw results/rep/budget/budget.png")
    ap.add_argument("--override", action="append", default=[], help="a Hydra override, e.g. model.dim=16 (repeatable)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if not args.plot:
        if not (args.dataset and args.model):
            ap.error("DATASET and MODEL are required unless --plot")
        out = args.out or OUT / f"{args.dataset}_{args.model}.json"
        measure(args.dataset, args.model, args.minutes, args.every, args.seed, args.override, out)
        print(f"wrote {out}")
    folder = args.out.parent if args.out else OUT
    print(f"wrote {plot(folder)}")
    print(f"wrote {readme(folder)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
