"""``make bench-pshgcn [ARGS="--out DIR"]``: seconds per epoch and peak memory per dataset and model.

Each (dataset, model) runs in its own process (so peak memory is its own) through the real entry point
for a fixed number of epochs without early stopping. Writes DIR/benchmark.json (default
outputs/results/pshgcn; `--out results/pshgcn` replaces the committed one). `make report` renders it into
results/pshgcn/README.md with the protocol's epochs and wall times from the result records
(replications/pshgcn/report.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from shared.atomic import write_json_atomic
from shared.paths import HAND_RUNS
from shared.runinfo import environment

DATASETS = ["dblp", "acm", "imdb", "aminer"]
MODELS = ["pshgcn", "rgcn", "rsage"]
EPOCHS = 10


def measure(dataset: str, model: str, workdir: Path) -> dict:
    choice = f"pshgcn/{dataset}" if model == "pshgcn" else model
    cmd = [sys.executable, "-m", "replications", "paper=pshgcn", f"dataset={dataset}", f"model={choice}",
           # scale=full, cut to EPOCHS: the models at their real size (scale=smoke also shrinks K and widths)
           "scale=full", "seed=1", f"scale.max_epochs={EPOCHS}", f"scale.patience={EPOCHS + 1}", "tracker=none",
           f"paths.results_dir={workdir}"]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    record = json.loads((workdir / "pshgcn" / dataset / f"{model}.json").read_text())
    return {"dataset": dataset, "model": model, "seconds_per_epoch": record["runs"][0]["train"]["seconds_per_epoch"],
            "peak_memory_mb": record["peak_memory_mb"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HAND_RUNS / "pshgcn", help="folder to write benchmark.json in")
    args = parser.parse_args(argv)
    rows = []
    load_before = os.getloadavg()[0]  # a busy machine inflates every figure: record how busy it was
    with tempfile.TemporaryDirectory() as tmp:
        for dataset in DATASETS:
            for model in MODELS:
                rows.append(measure(dataset, model, Path(tmp)))
                print(rows[-1], flush=True)
    load = {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)}
    args.out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(args.out / "benchmark.json", {"epochs_timed": EPOCHS, "load_average_1min": load, "rows": rows,
                                                    "environment": environment()})
    print(f"wrote {args.out / 'benchmark.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
