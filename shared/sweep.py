"""``python -m shared.sweep <multirun folder> [--out FILE.md]``: rank a Hydra sweep's settings on validation.

Each job of ``make sweep-<paper>`` writes its result file under its own Hydra output folder (the sweep
configs set ``paths.results_dir: ${hydra:runtime.output_dir}``) next to ``.hydra/overrides.yaml``. This groups the
jobs by their overrides without ``seed`` (one setting, several seeds), averages each metric over the seeds,
and ranks the settings on the paper's ``select_metric`` only, in the direction ``select_mode`` gives
(``max`` unless the paper config says ``min``). Test metrics are shown, never used to choose.

Only finished jobs (shared.records.finished) with a finite validation metric are ranked, and a setting one of whose
seeds diverged (NaN or inf) is not ranked at all: its mean over the other seeds would hide the instability. Every
other job is listed under the ranking: failed (a folder without a finished record), diverged, unreadable (a result
file that is not JSON: named on stderr, the rest still ranked) and never ran (in the grid that the sweep folder's
multirun.yaml records, but no folder: the multirun stopped before it).
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from shared.atomic import write_text_atomic
from shared.cli_errors import shown
from shared.records import finished, is_official, read_json
from shared.runinfo import portable_paths

FAILED, DIVERGED, UNREADABLE, NEVER_RAN = "failed", "diverged", "unreadable", "never ran"


@dataclass(frozen=True)
class Job:
    """One job of a sweep: finished (``problem`` empty, ``record`` its result) or why it is not ranked."""

    name: str  # its folder under the ranked folder ("3", "2026-12-01/20-44-07/3"); "" for a job that never ran
    overrides: tuple[str, ...]
    record: dict[str, Any] = field(default_factory=dict)  # empty unless finished
    problem: str = ""  # FAILED, DIVERGED, UNREADABLE or NEVER_RAN
    detail: str = ""  # what the list under the ranking says about it

    @property
    def setting(self) -> tuple[tuple[str, str], ...]:
        """The overrides without the seed: the jobs of one setting differ only in it."""
        pairs = (o.split("=", 1) for o in self.overrides if "=" in o)
        return tuple(sorted((k, v) for k, v in pairs if k.lstrip("+") != "seed"))


def _natural(path: Path) -> list[Any]:
    """Job folders in Hydra's numbering order (2 before 10), not the string order."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.as_posix())]


def _not_a_record(record: Any) -> str | None:
    """Why a finished-looking JSON file cannot be ranked as a result record, or None."""
    if not isinstance(record, dict):
        return f"it holds a {type(record).__name__}, not a result record"
    if not isinstance(record.get("aggregate"), dict) or not isinstance((record.get("config") or {}).get("paper"), dict):
        return "it has no 'aggregate' or no 'config.paper': not a result record"
    return None


def _job(job_dir: Path, folder: Path, overrides: tuple[str, ...]) -> Job:
    """A job's state from the result files under its folder (<paper>/<dataset>/<model>.json, as shared.runner writes)."""
    name = job_dir.relative_to(folder).as_posix()
    bad: list[str] = []
    for path in sorted(job_dir.glob("*/*/*.json")):
        if path.name.endswith(".partial.json") or is_official(path):
            continue
        record, problem = read_json(path)
        if problem is None and isinstance(record, dict) and not finished(record):
            continue  # written by a run that has not finished all its seeds
        problem = problem or _not_a_record(record)
        if problem:  # the path under the ranked folder: the page written with --out names no machine path
            bad.append(f"{path.relative_to(folder).as_posix()}: {problem}")
        else:
            return Job(name, overrides, record)
    if bad:
        return Job(name, overrides, problem=UNREADABLE, detail="; ".join(bad))
    partials = sorted(job_dir.glob("*/*/*.partial.json"))
    logs = sorted(job_dir.glob("*/*/*.log"))
    why = "no finished result record (it stopped, was refused, or is still running)"
    if partials:
        why += f"; seeds kept in {partials[0].relative_to(folder).as_posix()}"
    if logs:
        why += f"; its log: {logs[0].relative_to(folder).as_posix()}"
    return Job(name, overrides, problem=FAILED, detail=why)


def _planned(sweep_dir: Path) -> list[tuple[str, ...]] | None:
    """Every job of the grid the multirun.yaml of a sweep folder records, in Hydra's order; None if it cannot tell."""
    from shared.sweep_grid import planned_jobs

    try:
        hydra = yaml.safe_load((sweep_dir / "multirun.yaml").read_text())["hydra"]
        params = hydra["sweeper"].get("params") or {}
        return [tuple(job) for job in planned_jobs(params, list(hydra["overrides"]["task"]))]
    except Exception:  # noqa: BLE001 - an old or hand-made folder: the jobs found are still ranked, none is called missing
        return None


def jobs(folder: Path) -> list[Job]:
    """Every job under a multirun folder (one sweep or a folder of sweeps): found ones in Hydra's order, then the jobs
    of each sweep's grid that have no folder."""
    found: list[Job] = []
    for overrides_file in sorted(folder.rglob(".hydra/overrides.yaml"), key=_natural):
        job_dir = overrides_file.parent.parent
        try:
            overrides = yaml.safe_load(overrides_file.read_text())
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            overrides = exc
        if not isinstance(overrides, list):
            found.append(Job(job_dir.relative_to(folder).as_posix(), (), problem=UNREADABLE,
                             detail=f"{overrides_file.relative_to(folder).as_posix()}: not a list of overrides"))
            continue
        found.append(_job(job_dir, folder, tuple(map(str, overrides))))
    missing = []
    for multirun in sorted(folder.rglob("multirun.yaml"), key=_natural):
        sweep_dir = multirun.parent
        prefix = "" if sweep_dir == folder else sweep_dir.relative_to(folder).as_posix() + "/"
        ran = {j.overrides for j in found if j.name.startswith(prefix)}
        missing += [Job("", job, problem=NEVER_RAN, detail="never ran (the multirun stopped before it)")
                    for job in _planned(sweep_dir) or [] if job not in ran]
    return found + missing


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass
class Ranking:
    metric: str
    mode: str
    rows: list[dict[str, Any]]  # the ranked settings, best first
    unranked: list[Job]  # every job not in a row, with why
    total: int  # jobs found or planned


def rank(all_jobs: list[Job]) -> Ranking:
    done = [j for j in all_jobs if not j.problem]
    if not done:
        raise ValueError("no finished sweep jobs (result files next to .hydra/overrides.yaml) in that folder"
                         + (f": {summary(all_jobs)}" if all_jobs else ""))
    paper = done[0].record["config"]["paper"]
    metric, mode = paper.get("select_metric"), paper.get("select_mode", "max")
    if not metric:
        raise ValueError(f"paper '{paper.get('name')}' has no select_metric: nothing to rank a sweep on")
    unranked = [j for j in all_jobs if j.problem]
    ranked: list[Job] = []
    for j in done:
        value = (j.record["aggregate"].get(metric) or {}).get("mean")
        if not _number(value):
            unranked.append(replace(j, problem=FAILED, detail=f"its record has no {metric}"))
        elif not math.isfinite(value):
            unranked.append(replace(j, problem=DIVERGED, detail=f"{metric} = {value}"))
        else:
            ranked.append(j)
    diverged = {j.setting: j for j in unranked if j.problem == DIVERGED}
    groups: dict[tuple, list[Job]] = {}
    for j in ranked:
        if j.setting in diverged:  # finite itself, but a seed of its setting diverged: the setting is not ranked
            unranked.append(replace(j, problem=DIVERGED, detail=f"{metric} finite, but job {diverged[j.setting].name} "
                                                                 "of this setting (another seed) diverged"))
        else:
            groups.setdefault(j.setting, []).append(j)
    rows = []
    for key, members in groups.items():
        records = [j.record for j in members]
        names = [m for m in records[0]["aggregate"] if all(_number((r["aggregate"].get(m) or {}).get("mean")) for r in records)]
        means = {m: statistics.fmean(r["aggregate"][m]["mean"] for r in records) for m in names}
        seeds = sorted(run["seed"] for r in records for run in r.get("runs", []))
        rows.append({"setting": dict(key), "seeds": seeds, "metrics": means})
    rows.sort(key=lambda r: r["metrics"][metric], reverse=(mode == "max"))
    if not rows:
        raise ValueError(f"no sweep job to rank: none has a finite {metric}: {summary(unranked)}")
    return Ranking(metric, mode, rows, unranked, len(all_jobs))


def summary(unranked: list[Job]) -> str:
    """'3 jobs (1 failed, 1 diverged, 1 never ran)'."""
    counts = Counter(j.problem for j in unranked)
    kinds = [k for k in (FAILED, DIVERGED, UNREADABLE, NEVER_RAN) if counts[k]]
    return f"{len(unranked)} job{'s' * (len(unranked) != 1)} ({', '.join(f'{counts[k]} {k}' for k in kinds)})"


def _fmt(value: float) -> str:
    return f"{value:.1f}" if abs(value) >= 100 else f"{value:.4g}"  # perplexities keep a decimal, MRRs 4 digits


def markdown(ranking: Ranking, shown_metrics: list[str]) -> str:
    metric, mode, rows = ranking.metric, ranking.mode, ranking.rows
    # Only the axes that vary over the grid (the unranked jobs too: one ranked row still shows its values); constant
    # overrides (paper=..., +sweep=...) say nothing about the ranking.
    settings = [r["setting"] for r in rows] + [dict(j.setting) for j in ranking.unranked if j.overrides]
    axes = sorted(k for k in {k for s in settings for k in s} if len({s.get(k) for s in settings}) > 1)
    lines = [f"Ranked on `{metric}` ({'higher' if mode == 'max' else 'lower'} is better; validation only), "
             "mean over the seeds of each setting. First row = the selected setting.", "",
             "| " + " | ".join([*axes, "seeds", *shown_metrics]) + " |", "|" + "---|" * (len(axes) + 1 + len(shown_metrics))]
    for r in rows:
        cells = [r["setting"].get(a, "") for a in axes] + [",".join(map(str, r["seeds"]))]
        cells += [_fmt(r["metrics"][m]) if m in r["metrics"] else "—" for m in shown_metrics]
        lines.append("| " + " | ".join(cells) + " |")
    if len({tuple(r["seeds"]) for r in rows}) > 1:
        lines += ["", "The settings' seeds differ (jobs failed or never ran): their means are over different seeds."]
    if ranking.unranked:
        lines += ["", f"Not ranked: {summary(ranking.unranked)} of {ranking.total}:", "",
                  "| job | overrides | why |", "|---|---|---|"]
        for kind in (FAILED, DIVERGED, UNREADABLE, NEVER_RAN):
            for j in (j for j in ranking.unranked if j.problem == kind):
                # The grid's axes and the seed: the constant overrides (paper=..., +sweep=...) would hide them.
                overrides = " ".join(o for o in j.overrides if o.split("=", 1)[0].lstrip("+") in {*axes, "seed"})
                overrides = overrides or " ".join(j.overrides)
                why = j.detail if j.detail.startswith(kind) else f"{kind}: {j.detail}" if j.detail else kind
                lines.append(f"| {j.name or '—'} | {overrides} | {why.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="rank a Hydra sweep's settings on the paper's validation metric")
    parser.add_argument("folder", type=Path, help="the multirun/<date>/<time> folder of the sweep")
    parser.add_argument("--out", type=Path, help="also write the table here (atomically)")
    parser.add_argument("--title", help="heading of the written table (default: the folder)")
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        print(f"error: {args.folder} is not a folder: give the multirun/<date>/<time> folder of the sweep "
              "(make sweep-<paper> ranks the one it made)", file=sys.stderr)
        return 2
    all_jobs = jobs(args.folder)
    for j in all_jobs:  # a corrupt result file: named, its job listed under the ranking, the rest ranked
        if j.problem == UNREADABLE:
            print(f"warning: skipping {shown(args.folder)}/{j.detail}; job {j.name} is listed as unreadable, the other "
                  "jobs are ranked", file=sys.stderr)
    try:
        ranking = rank(all_jobs)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    tests = sorted(m for m in ranking.rows[0]["metrics"] if m.startswith("test"))[:4]
    command = portable_paths("python -m shared.sweep " + " ".join(argv))  # no machine path on the page
    heading = args.title or f"Sweep {args.folder}"
    text = f"# {heading}\n\nMade by `{command}`.\n\n" + markdown(ranking, [ranking.metric, *tests])
    print(text)
    if ranking.unranked:
        print(f"note: {summary(ranking.unranked)} not ranked: listed under the ranking", file=sys.stderr)
    if args.out:
        write_text_atomic(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
