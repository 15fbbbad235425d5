"""``make bench-smoke``: each paper's ``make smoke`` share in wall seconds, with the machine's load beside it.

Runs ``python -m replications.replicate <paper> scale=smoke tracker=none`` for every paper, one after the
other in its own process (as ``make smoke`` does), and writes results/smoke/benchmark.json and BENCHMARK.md.
A benchmark, not a timed test: a loaded machine stretches every figure, so the 1-minute load average is
recorded before and after each paper. The target is the whole ``make smoke`` under 10 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import replications
from shared.atomic import write_json_atomic, write_text_atomic
from shared.paths import HAND_RUNS, REPO_ROOT
from shared.runinfo import environment

TARGET_SECONDS = 600


def time_paper(paper: str) -> dict:
    cmd = [sys.executable, "-m", "replications.replicate", paper, "scale=smoke", "tracker=none"]
    load_before, started = os.getloadavg()[0], time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO_ROOT)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        print(proc.stdout[-2000:], proc.stderr[-4000:], sep="\n", file=sys.stderr)
    return {"paper": paper, "wall_seconds": round(seconds, 1), "exit_code": proc.returncode,
            "load_average_1min": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)}}


def render(rows: list[dict], env: dict, total: float) -> str:
    hw = env["hardware"]
    lines = [
        "# `make smoke` benchmark\n",
        f"`make bench-smoke` on {hw['cpu']} ({hw['cpu_count']} cores), torch {env['versions'].get('torch')}, "
        f"commit {str(env['git_commit'])[:10]}{' (dirty tree)' if env['git_dirty'] else ''}. Each paper runs "
        "`python -m replications.replicate <paper> scale=smoke tracker=none` in its own process, with a warm "
        "cache (datasets fetched and parsed once before; a cold first run also parses every dataset). "
        "The machine was shared with other experiments: the 1-minute load average (2 = both cores busy) "
        "is beside each figure.\n",
        "| paper | wall seconds | load before | load after | exit code |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        load = r["load_average_1min"]
        lines.append(f"| {r['paper']} | {r['wall_seconds']:.1f} | {load['before']} | {load['after']} | {r['exit_code']} |")
    verdict = "within" if total < TARGET_SECONDS else "OVER"
    lines.append(f"| **total** | **{total:.1f}** | | | |\n")
    lines.append(f"Total {total / 60:.1f} min: {verdict} the {TARGET_SECONDS // 60}-minute target.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HAND_RUNS / "smoke")
    parser.add_argument("--papers", default=",".join(replications.available()))
    args = parser.parse_args(argv)
    env = environment()  # at the start: the commit whose code the runs below time
    rows = []
    for paper in args.papers.split(","):
        rows.append(time_paper(paper))
        print(rows[-1], flush=True)
    total = round(sum(r["wall_seconds"] for r in rows), 1)
    write_json_atomic(args.out / "benchmark.json", {"total_wall_seconds": total, "target_seconds": TARGET_SECONDS,
                                                    "rows": rows, "environment": env})
    text = render(rows, env, total)
    write_text_atomic(args.out / "BENCHMARK.md", text)
    print(text)
    return 0 if all(r["exit_code"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
