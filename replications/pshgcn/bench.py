"""``make bench-pshgcn``: seconds per epoch, peak memory and end-to-end time per dataset and model.

Each (dataset, model) runs in its own process (so peak memory is its own) through the real entry point
for a fixed number of epochs without early stopping. End-to-end protocol times come from the committed
result files of `make replicate-pshgcn`. Writes results/pshgcn/benchmark.json and BENCHMARK.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from shared.atomic import write_json_atomic, write_text_atomic
from shared.runinfo import environment
from shared.runner import PROJECT_ROOT

DATASETS = ["dblp", "acm", "imdb", "aminer"]
MODELS = ["pshgcn", "rgcn", "rsage"]
EPOCHS = 10
OUT = PROJECT_ROOT / "results" / "pshgcn"


def measure(dataset: str, model: str, workdir: Path) -> dict:
    choice = f"pshgcn/{dataset}" if model == "pshgcn" else model
    cmd = [sys.executable, "-m", "replications", "paper=pshgcn", f"dataset={dataset}", f"model={choice}",
           # scale=full, cut to EPOCHS: the models at their real size (scale=smoke also shrinks K and widths)
           "scale=full", "seed=1", f"scale.max_epochs={EPOCHS}", f"scale.patience={EPOCHS + 1}", "tracker=none",
           f"results_dir={workdir}"]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    record = json.loads((workdir / "pshgcn" / dataset / f"{model}.json").read_text())
    full = OUT / dataset / f"{model}.json"
    protocol = json.loads(full.read_text()) if full.exists() else None
    return {
        "dataset": dataset,
        "model": model,
        "seconds_per_epoch": record["runs"][0]["train"]["seconds_per_epoch"],
        "peak_memory_mb": record["peak_memory_mb"],
        "protocol_wall_seconds": protocol["wall_seconds"] if protocol else None,
        "protocol_epochs_mean": (sum(r["train"]["epochs_run"] for r in protocol["runs"]) / len(protocol["runs"])
                                 if protocol else None),
    }


def main() -> int:
    rows = []
    load_before = os.getloadavg()[0]  # a busy machine inflates every figure: record how busy it was
    with tempfile.TemporaryDirectory() as tmp:
        for dataset in DATASETS:
            for model in MODELS:
                rows.append(measure(dataset, model, Path(tmp)))
                print(rows[-1], flush=True)
    env = environment()
    load = {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)}
    write_json_atomic(OUT / "benchmark.json", {"epochs_timed": EPOCHS, "load_average_1min": load, "rows": rows,
                                               "environment": env})
    hw = env["hardware"]
    lines = [
        "# PSHGCN benchmark\n",
        f"`make bench-pshgcn` on {hw['cpu']} ({hw['cpu_count']} cores, {hw['torch_threads']} torch threads), "
        f"torch {env['versions'].get('torch')}, commit {str(env['git_commit'])[:10]}"
        f"{' (dirty tree)' if env['git_dirty'] else ''}; 1-minute load average {load['before']} before, "
        f"{load['after']} after (2 = both cores busy).",
        f"Seconds per epoch = one training step plus the validation pass, averaged over {EPOCHS} epochs "
        "(first epoch included). Peak memory = the process's maximum resident set. The protocol columns come from "
        "the committed full runs (5 seeds, early stopping).\n",
        "| dataset | model | s / epoch | peak memory (MB) | epochs per seed (protocol) | protocol wall time |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        wall = f"{r['protocol_wall_seconds'] / 60:.1f} min" if r["protocol_wall_seconds"] else "—"
        epochs = f"{r['protocol_epochs_mean']:.0f}" if r["protocol_epochs_mean"] else "—"
        lines.append(f"| {r['dataset']} | {r['model']} | {r['seconds_per_epoch']:.3f} | {r['peak_memory_mb']:.0f} "
                     f"| {epochs} | {wall} |")
    write_text_atomic(OUT / "BENCHMARK.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
