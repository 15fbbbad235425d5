"""``python -m replications.rep.budget DATASET MODEL --minutes M``: the measured cost of a base-model recipe.

Trains one seed of ``conf/model/rep_<MODEL>.yaml`` (the 1-vs-all recipe) on DATASET for at most M minutes of
training (wall) time and, every ``--every`` epochs, ranks the full validation and test sets (filtered; outside the
timed training). Writes ``--out`` (default outputs/results/rep/budget/<dataset>_<model>.json; the committed curves
are results/rep/budget/, given as ``--out``) after every checkpoint (``complete: false`` until the end), with the
command, commit, hardware and versions. The cost axis is the process's CPU time spent
training (one thread, evaluation excluded): on a shared machine wall time measures the neighbours' load, CPU time
measures this recipe on this CPU (= wall time on an idle core). Then the CPU time to the test-MRR target
(paper.yaml's, the same the results page uses): measured where the curve reaches it, else extrapolated by a
straight line in log(training time) through the last points, labelled as such. The figure and table of the
curves are part of REP's page (replications/rep/report.py, ``make report``).
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
from shared.atomic import write_json_atomic
from shared.paths import CONF_DIR, HAND_RUNS
from shared.reference import load_paper, reported_for
from shared.replication import Run
from shared.runinfo import environment, peak_memory_mb

OUT = HAND_RUNS / "rep" / "budget"  # a run by hand; the committed curves are written with --out results/rep/budget/...
YEAR = 365 * 24 * 3600.0


def compose(dataset: str, model: str, overrides: list[str]):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return hydra_compose("config", overrides=["paper=rep", "tracker=none", f"dataset={dataset}",
                                                  f"model=rep_{model}", "device=cpu", *overrides])


def run_of(cfg) -> Run:
    """The Run of a composed config, for calling REPLICATION's methods outside the runner (nothing is written)."""
    from shared.runner import make_run

    return make_run(cfg)


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
    data = REPLICATION.load_data(run_of(cfg))
    kge = REPLICATION.build_model(run_of(cfg), data)
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset")
    ap.add_argument("model")
    ap.add_argument("--minutes", type=float, default=30.0, help="training-time budget (evaluation excluded)")
    ap.add_argument("--every", type=float, default=0.25, help="checkpoint every this many epochs")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None, help=f"the curve file (default {OUT}/<dataset>_<model>.json)")
    ap.add_argument("--override", action="append", default=[], help="a Hydra override, e.g. model.dim=16 (repeatable)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    out = args.out or OUT / f"{args.dataset}_{args.model}.json"
    measure(args.dataset, args.model, args.minutes, args.every, args.seed, args.override, out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
