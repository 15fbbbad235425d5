"""``python -m replications.rep.bench_eval [--threads N] [--repeats R]``: wall time of the filtered evaluation.

Ranks the whole FB15k-237 test set (20,466 triples, head and tail queries: 40,932 filtered ranks against all
14,541 entities) with each base model at the width its committed recipe trains (conf/model/rep_<model>.yaml),
embeddings random (the cost does not depend on their values). L1 TransE runs the fused kernel of l1score.py and is
timed on the whole set like the dot-product models (``l1_backend`` says which scorer ran; with the cdist fallback it
is sampled like RotatE). RotatE's L1 (summed complex moduli, no matrix product) and the fallback are timed on the
first ``--sample`` and 2 x ``--sample`` test triples and a straight line through the two is read at the whole set
(labelled ``extrapolated``): their full ranking is ~10-100x a dot-product model's on this CPU. Writes ``--out`` (default
outputs/results/rep/bench_eval.json; REP's page reads results/rep/bench_eval.json) with the command, commit,
hardware and versions. It runs alone among the project's benchmarks (shared.exclusive lock, waited for) and
records the 1-minute load average before and after.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch

from replications.rep import REPLICATION, hparams, score_fn
from replications.rep.budget import compose, run_of
from replications.rep.evaluate import filtered_metrics
from replications.rep.l1score import backend
from shared.atomic import write_json_atomic
from shared.exclusive import exclusive
from shared.paths import HAND_RUNS
from shared.runinfo import environment

OUT = HAND_RUNS / "rep" / "bench_eval.json"  # the committed one: --out results/rep/bench_eval.json
TARGET_SECONDS = 30.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=2, help="best of this many (the first also warms caches)")
    ap.add_argument("--models", default="transe,distmult,complex,rotate")
    ap.add_argument("--dim", type=int, default=None, help="override every model's width (smoke tests)")
    ap.add_argument("--sample", type=int, default=1024, help="test triples timed for the L1-distance models")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    with exclusive() as alone:  # no other benchmark of the project times at the same time
        rows = measure(args)
    write_json_atomic(Path(args.out), {
        "what": "filtered ranking of the FB15k-237 test set, head + tail queries, replications.rep.evaluate",
        "target_seconds": TARGET_SECONDS, "threads": args.threads, "rows": rows,
        "load_average_1_5_15min": os.getloadavg(), "semaphore": alone["how"], "exclusive": alone,
        **environment()})
    print(f"wrote {args.out}")
    return 0


def measure(args: argparse.Namespace) -> list[dict]:
    torch.set_num_threads(args.threads)
    cfg = compose("fb15k_237", "complex", [])
    data = REPLICATION.load_data(run_of(cfg))
    known = data.all_true()
    rows = []
    for name in args.models.split(","):
        cfg = compose("fb15k_237", name, [] if args.dim is None else [f"model.dim={args.dim}"])
        torch.manual_seed(0)
        model = REPLICATION.build_model(run_of(cfg), data)
        l1 = getattr(model, "distance", "l2") == "l1" and model.kind in ("transe", "rotate")
        sampled = l1 and (model.kind == "rotate" or backend() != "kernel")
        sizes = (args.sample, 2 * args.sample) if sampled else (len(data.test),)
        best = {}
        with torch.no_grad():
            for n in sizes:
                runs = []
                for _ in range(args.repeats):
                    started = time.perf_counter()
                    filtered_metrics(score_fn(model, model.entity.detach()), data.test[:n], known)
                    runs.append(time.perf_counter() - started)
                best[n] = min(runs)
        if sampled:  # t(n) = fixed + n * per_triple through the two sizes, evaluated at the whole test set
            per_triple = (best[sizes[1]] - best[sizes[0]]) / args.sample
            times = [best[sizes[0]] + per_triple * (len(data.test) - sizes[0])]
        else:
            times = [best[sizes[0]]]
        row = {"model": name, "dim": hparams(cfg)["dim"], "distance": getattr(model, "distance", None),
               "l1_backend": backend() if l1 and model.kind == "transe" else None,
               "queries": 2 * len(data.test), "timed_seconds": {str(n): round(t, 2) for n, t in best.items()},
               "how": (f"extrapolated: a straight line in #triples through the first {sizes[0]} and {sizes[1]} test "
                       "triples" if sampled else f"measured, best of {args.repeats}"),
               "seconds_best": round(min(times), 2),
               "under_target": min(times) < TARGET_SECONDS}
        rows.append(row)
        print(f"{name:9s} dim {row['dim']:5d}  {row['seconds_best']:8.2f} s  ({row['how']}; {row['timed_seconds']})",
              flush=True)
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
