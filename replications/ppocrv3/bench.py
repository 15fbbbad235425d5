"""Interleaved latency: every engine on the same images in rotation, so a load change on a shared machine hits
all engines alike (the main run times engines one after another, minutes apart).

`python -m replications.ppocrv3.bench [--images-icdar2015 N] [--images-funsd N] [--out FOLDER]` writes
FOLDER/latency_interleaved.json (default outputs/results/ppocrv3, a run by hand). Written into the paper's results
folder (`--out results/ppocrv3`), the page (`make report`) reports these medians and uses them for the speed side
of the paper's claim.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from omegaconf import OmegaConf

from replications.ocr import engines
from replications.ppocrv3 import data as pdata
from replications.ppocrv3 import run
from replications.ppocrv3.report import INTERLEAVED
from shared.atomic import write_json_atomic
from shared.paths import CONF_DIR, HAND_RUNS
from shared.runinfo import environment, git_state

CHOICES = {"ppocrv2": "ppocrv3_ppocrv2", "ppocrv3": "ppocrv3/{dataset}", "ppocrv4": "ppocrv3_ppocrv4",
           "tesseract": "ppocrv3_tesseract"}


def bench(dataset: str, n_images: int, names: list[str]) -> dict[str, dict[str, float]]:
    cfg = OmegaConf.create({"dataset": {"name": dataset}, "scale": {"name": "full"}, "paper": {"protocol": {}}})
    rows = pdata.load(cfg).select(range(n_images))
    images = [run.read_image(r["image_path"]) for r in rows]
    built = {}
    for name in names:
        model_cfg = OmegaConf.load(CONF_DIR / "model" / (CHOICES[name].format(dataset=dataset) + ".yaml"))
        built[name] = engines.build(model_cfg, run.threads())
        built[name](images[0])  # warm-up, not timed
    times: dict[str, dict[str, list[float]]] = {n: {} for n in names}
    for i, img in enumerate(images):
        order = names[i % len(names):] + names[: i % len(names)]  # rotate who goes first
        for name in order:
            for stage, sec in built[name](img).seconds.items():
                times[name].setdefault(stage, []).append(sec)
    out = {}
    for name, stages in times.items():
        out[name] = {}
        for stage, secs in stages.items():
            ms = 1000 * np.asarray(secs)
            prefix = "" if stage == "pipeline" else f"{stage}_"
            out[name][f"{prefix}latency_ms_median"] = float(np.median(ms))
            out[name][f"{prefix}latency_ms_p90"] = float(np.percentile(ms, 90))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--images-icdar2015", type=int, default=50)
    parser.add_argument("--images-funsd", type=int, default=10)
    parser.add_argument("--out", type=Path, default=HAND_RUNS / "ppocrv3",
                        help="folder for latency_interleaved.json (results/ppocrv3 to update the committed page)")
    args = parser.parse_args()
    names = [n for n in CHOICES if n != "tesseract" or engines.shutil.which("tesseract")]
    git = git_state()  # at start: the code that is timed
    record: dict = {"threads": run.threads(), "engines": names, "load_average_before": os.getloadavg(), "datasets": {}}
    t0 = time.perf_counter()
    for dataset, n in (("icdar2015", args.images_icdar2015), ("funsd", args.images_funsd)):
        record["datasets"][dataset] = {"images": n, "latency": bench(dataset, n, names)}
        print(dataset, record["datasets"][dataset])
    record["load_average_after"] = os.getloadavg()
    record["wall_seconds"] = round(time.perf_counter() - t0, 1)
    record["environment"] = environment(git)  # command, commit, versions, hardware
    write_json_atomic(args.out / INTERLEAVED, record)
    print(f"wrote {args.out / INTERLEAVED}; `make report` rebuilds the page from the results folder's copy")


if __name__ == "__main__":
    main()
