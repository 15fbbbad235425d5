"""``python -m shared.sweep <multirun folder> [--out FILE.md]``: rank a Hydra sweep's settings on validation.

Each job of ``make sweep-<paper>`` writes its result file under its own Hydra output folder (the sweep
configs set ``paths.results_dir: ${hydra:runtime.output_dir}``) next to ``.hydra/overrides.yaml``. This groups the
jobs by their overrides without ``seed`` (one setting, several seeds), averages each metric over the seeds,
and ranks the settings on the paper's ``select_metric`` only, in the direction ``select_mode`` gives
(``max`` unless the paper config says ``min``). Test metrics are shown, never used to choose.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import yaml

from shared.atomic import write_text_atomic
from shared.runinfo import portable_paths


def jobs(folder: Path) -> list[tuple[dict[str, str], dict[str, Any]]]:
    """(overrides, result record) for every finished job under a multirun folder."""
    found = []
    for overrides_file in sorted(folder.rglob(".hydra/overrides.yaml")):
        job_dir = overrides_file.parent.parent
        results = [p for p in job_dir.glob("*/*/*.json") if not p.name.endswith(".partial.json")]
        records = [json.loads(p.read_text()) for p in results]
        records = [r for r in records if r.get("complete")]
        if not records:
            continue  # a job that failed or is still running
        overrides = dict(o.split("=", 1) for o in yaml.safe_load(overrides_file.read_text()) if "=" in o)
        found.append((overrides, records[0]))
    return found


def rank(found: list[tuple[dict[str, str], dict[str, Any]]]) -> tuple[str, str, list[dict[str, Any]]]:
    if not found:
        raise ValueError("no finished sweep jobs (result files next to .hydra/overrides.yaml) in that folder")
    paper = found[0][1]["config"]["paper"]
    metric, mode = paper.get("select_metric"), paper.get("select_mode", "max")
    if not metric:
        raise ValueError(f"paper '{paper['name']}' has no select_metric: nothing to rank a sweep on")
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for overrides, record in found:
        key = tuple(sorted((k, v) for k, v in overrides.items() if k.lstrip("+") != "seed"))
        groups.setdefault(key, []).append(record)
    rows = []
    for key, records in groups.items():
        names = records[0]["aggregate"].keys()
        means = {m: statistics.fmean(r["aggregate"][m]["mean"] for r in records) for m in names}
        rows.append({"setting": dict(key), "seeds": sorted(run["seed"] for r in records for run in r["runs"]),
                     "metrics": means})
    rows.sort(key=lambda r: r["metrics"][metric], reverse=(mode == "max"))
    return metric, mode, rows


def _fmt(value: float) -> str:
    return f"{value:.1f}" if abs(value) >= 100 else f"{value:.4g}"  # perplexities keep a decimal, MRRs 4 digits


def markdown(metric: str, mode: str, rows: list[dict[str, Any]], shown: list[str]) -> str:
    # Only the axes that vary: constant overrides (paper=..., +sweep=...) say nothing about the ranking.
    axes = sorted(k for k in {k for r in rows for k in r["setting"]} if len({r["setting"].get(k) for r in rows}) > 1)
    lines = [f"Ranked on `{metric}` ({'higher' if mode == 'max' else 'lower'} is better; validation only), "
             "mean over the seeds of each setting. First row = the selected setting.", "",
             "| " + " | ".join([*axes, "seeds", *shown]) + " |", "|" + "---|" * (len(axes) + 1 + len(shown))]
    for r in rows:
        cells = [r["setting"].get(a, "") for a in axes] + [",".join(map(str, r["seeds"]))]
        cells += [_fmt(r["metrics"][m]) if m in r["metrics"] else "—" for m in shown]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="rank a Hydra sweep's settings on the paper's validation metric")
    parser.add_argument("folder", type=Path, help="the multirun/<date>/<time> folder of the sweep")
    parser.add_argument("--out", type=Path, help="also write the table here (atomically)")
    parser.add_argument("--title", help="heading of the written table (default: the folder)")
    args = parser.parse_args(argv)
    try:
        metric, mode, rows = rank(jobs(args.folder))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    tests = sorted(m for m in rows[0]["metrics"] if m.startswith("test"))[:4]
    command = portable_paths("python -m shared.sweep " + " ".join(argv))  # no machine path on the page
    heading = args.title or f"Sweep {args.folder}"
    text = f"# {heading}\n\nMade by `{command}`.\n\n" + markdown(metric, mode, rows, [metric, *tests])
    print(text)
    if args.out:
        write_text_atomic(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
