"""What the results pages show, computed once from the result files and the papers' paper.yaml files.

Renderers (shared.report.markdown, .html, .plot) only format this; they never read files or compare numbers.
Reproduced numbers come from each record's stored aggregate; the comparison is recomputed against the
paper's paper.yaml as it is now, so a reference added after a run shows up without re-running it.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

from shared.metric_ranges import check_record
from shared.records import finished, is_official, read_json
from shared.reference import load_paper, recompare
from shared.report.paper_hook import CLAIMS_NAME, Claim, failure
from shared.verdict import NO_REFERENCE, NOT_REPRODUCED, REPRODUCED, checked

PLOT_NAME = "reproduced_vs_reported.png"
DETAIL_NAME = "RESULTS.md"  # per-paper long table; results/<paper>/README.md belongs to the paper's own hook
UNRECORDED_CPU = "not recorded (seed resumed from an older partial file)"
STATUSES = (REPRODUCED, NOT_REPRODUCED, NO_REFERENCE)  # a number row's; claims have their own (shared.verdict)


@dataclass(frozen=True)
class Row:
    """One (paper, dataset, model, metric): our reproduction and the reference it is judged against."""

    paper: str
    dataset: str
    model: str
    metric: str
    mean: float
    std: float
    n: int
    reported: float | None
    kind: str | None
    source: str | None
    copied_by: str | None
    verified: bool | None
    difference: float | None
    status: str
    others: tuple[dict[str, Any], ...]
    missing_seeds: tuple[int, ...]
    cpus: tuple[str, ...]
    gpu: str | None
    threads: int | None
    wall_seconds: float
    commits: tuple[str, ...] = ()  # the commits whose code ran the seeds (short hashes)
    caveat: str = ""  # what a reader must know about the reference (paper.yaml `caveat:`), shown beside the status


@dataclass(frozen=True)
class Headline:
    """A first-screen row: the paper's own model on one dataset (row is None when it was not run there)."""

    dataset: str
    model: str
    metric: str
    row: Row | None


@dataclass
class PaperSection:
    paper: str
    info: dict[str, Any]
    headline_metric: str
    headline_models: tuple[str, ...]
    headlines: list[Headline]
    rows: list[Row]  # every test metric of every record, for the per-paper page
    counts: dict[str, int]
    figures: list[str]  # PNG paths relative to the results root, the summary plot first
    links: list[str]  # .md pages relative to the results root, the detail page first
    claims: list[Claim] = field(default_factory=list)


@dataclass
class Report:
    papers: list[PaperSection]
    unfinished: list[str] = field(default_factory=list)  # "<path>: k of n seeds done"
    unreadable: list[str] = field(default_factory=list)  # "<path>: <error>"
    failed: list[str] = field(default_factory=list)  # "<path>: failed: non-finite <metric> in k of n seeds"
    machines: dict[str, list[str]] = field(default_factory=dict)  # CPU -> "paper/dataset/model" it ran
    without_results: tuple[str, ...] = ()  # paper packages with no complete full-scale record yet
    commit: str | None = None  # the commit checked out when the pages were made (None: not a git checkout)
    date: str = ""  # that commit's date (YYYY-MM-DD), so that regenerating at one commit gives the same bytes


class Scan(NamedTuple):
    records: list[dict[str, Any]]  # complete full-scale records with finite metrics: the tables' rows
    unfinished: list[str]
    unreadable: list[str]
    failed: list[str]  # complete full-scale records with a non-finite metric: listed, never judged


def scan(root: Path) -> Scan:
    """(complete full-scale records, unfinished runs, unreadable files, failed records) under results/<paper>/<dataset>/."""
    records, unfinished, unreadable, failed = [], [], [], []
    for path in sorted(root.glob("*/*/*.json")):
        if is_official(path):
            continue  # the authors' code run: a reference (shared.reference.official_references), not a record
        record, error = read_json(path)
        rel = path.relative_to(root).as_posix()
        if error:
            unreadable.append(f"{rel}: {error}")
        elif not isinstance(record, dict) or "complete" not in record:
            continue  # a side file (e.g. <model>.details.json), not a result record
        elif not finished(record):  # a merge naming its missing seeds is finished (shared.records.finished)
            if path.name.endswith(".partial.json"):
                unfinished.append(f"{rel}: {len(record.get('runs', []))} of {_planned_seeds(record)} seeds done")
        elif record.get("scale") == "full":
            if (why := failure(record)) is not None:  # NaN metrics (a diverged run) would print as nan ± nan
                failed.append(f"{rel}: {why}")
                continue
            check_record(record, rel)  # an impossible stored value (an F1 of 150) is an error naming the file
            records.append(record)
    return Scan(records, unfinished, unreadable, failed)


def load_results(root: Path) -> list[dict[str, Any]]:
    """Only complete, full-scale records: a half-finished or smoke run never reaches the tables."""
    return scan(root)[0]


def _planned_seeds(saved: dict[str, Any]) -> int | str:
    cfg = saved.get("config") or {}
    try:
        return len(cfg["seed"] and [cfg["seed"]] or cfg["scale"]["seeds"] or cfg["paper"]["protocol"]["seeds"])
    except (KeyError, TypeError):
        return "?"


def record_cpus(record: dict[str, Any]) -> tuple[str, ...]:
    """Every CPU that ran a seed of this record. Files from before per-seed CPUs record one CPU for the file;
    a file mixing both formats had some seeds resumed from an older partial file, whose CPU is unknown."""
    runs = record.get("runs") or []
    file_cpu = (record.get("environment") or {}).get("hardware", {}).get("cpu") or "unknown"
    if not any(run.get("cpu") for run in runs):
        return (file_cpu,)
    return tuple(dict.fromkeys(run.get("cpu") or UNRECORDED_CPU for run in runs))


def record_commits(record: dict[str, Any]) -> tuple[str, ...]:
    runs = record.get("runs") or []
    found = [str(r.get("git_commit"))[:10] for r in runs if r.get("git_commit")]
    if not found and (record.get("environment") or {}).get("git_commit"):
        found = [str(record["environment"]["git_commit"])[:10]]
    return tuple(dict.fromkeys(found))


def _paper_yaml(papers_dir: Path, paper: str, root: Path) -> dict[str, Any] | None:
    """The paper file with the official-code records under the results root `root` as references."""
    path = papers_dir / paper / "paper.yaml"
    return load_paper(path, results_root=root) if path.exists() else None


def rows_of(record: dict[str, Any], paper: dict[str, Any] | None) -> list[Row]:
    """The record's metrics (all but validation ones without a reference), compared against the paper file as it
    is now (the stored comparison without one). Timings and counts are rows too: HetuMoE's metrics are all timings."""
    comparison = recompare(record, paper) if paper is not None else record["comparison"]
    hardware = (record.get("environment") or {}).get("hardware", {})
    return [
        Row(paper=record["paper"], dataset=record["dataset"], model=record["model"], metric=c["metric"],
            mean=c["reproduced_mean"], std=c["reproduced_std"], n=c["n"], reported=c.get("reported"),
            kind=c.get("reference_kind"), source=c.get("source"), copied_by=c.get("copied_by"),
            verified=c.get("verified"), difference=c.get("difference"), status=c["status"],
            others=tuple(c.get("other_references") or ()), missing_seeds=tuple(record.get("missing_seeds") or ()),
            cpus=record_cpus(record), gpu=hardware.get("gpu"), threads=hardware.get("torch_threads"),
            wall_seconds=record.get("wall_seconds", 0.0), commits=record_commits(record), caveat=c.get("caveat") or "")
        for c in comparison if not is_validation(c["metric"]) or c.get("reported") is not None
    ]  # a validation metric with a reference stays: that reference is on validation (nanoGPT has no test part)


def is_validation(metric: str) -> bool:
    """Validation metrics select models; the pages show what was measured on the held-out side."""
    return metric.startswith(("val_", "valid_", "val/"))


def headline_spec(info: dict[str, Any], paper: str, rows: list[Row]) -> tuple[str, tuple[str, ...]]:
    """paper.yaml's ``headline: {metric, model}`` (model: a name or a list); without it, the first test
    metric of the model named like the paper (every model when there is none)."""
    spec = info.get("headline") or {}
    models = spec.get("model")
    if models is None:
        own = [r.model for r in rows if r.model == paper]
        models = own[:1] or sorted({r.model for r in rows})
    models = (models,) if isinstance(models, str) else tuple(models)
    metric = spec.get("metric") or next((r.metric for r in rows if r.model in models), "")
    return metric, models


def _figures(root: Path, paper: str) -> list[str]:
    others = sorted(p.relative_to(root).as_posix() for p in (root / paper).rglob("*.png") if p.name != PLOT_NAME)
    return [f"{paper}/{PLOT_NAME}", *others]


def _links(root: Path, paper: str) -> list[str]:
    pages = sorted(p.name for p in (root / paper).glob("*.md") if p.name != DETAIL_NAME)
    pages.sort(key=lambda name: name != "README.md")  # the paper's own summary first
    return [f"{paper}/{DETAIL_NAME}", *(f"{paper}/{name}" for name in pages)]


def claims_of(root: Path, paper: str) -> list[Claim]:
    """The claims a paper's report() judged in an earlier run, from results/<paper>/claims.json (shared.report.paper_page
    writes it; one schema for every paper): only for a paper whose hook did not run in this process (none given, or
    its data not here); otherwise its claims come in memory (build_report's ``claims``). A status outside the
    vocabulary is an error naming the file."""
    path = root / paper / CLAIMS_NAME
    if not path.exists():
        return []
    data, error = read_json(path)
    if error or not isinstance(data, dict):
        raise ValueError(f"{path}: not a claims file ({error or 'not an object'}); run `make report` to rebuild it")
    found = []
    for e in data.get("claims") or []:
        try:
            checked(e["status"])
            interval = tuple(e["interval"]) if e.get("interval") is not None else None
            found.append(Claim(**{**e, "interval": interval}))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}: claim {e.get('text', '?')!r}: {exc}") from None
    return found


def section(root: Path, paper: str, records: list[dict[str, Any]], papers_dir: Path,
            claims: list[Claim] | None = None) -> PaperSection:
    """One paper's part of the pages; ``claims``: what its hook returned in this process (None: read claims.json)."""
    reference = _paper_yaml(papers_dir, paper, root)
    info = reference if reference is not None else {}
    rows = [row for record in records for row in rows_of(record, reference)]
    metric, models = headline_spec(info, paper, rows)
    by_key = {(r.dataset, r.model, r.metric): r for r in rows}
    headlines = [Headline(dataset, model, metric, by_key.get((dataset, model, metric)))
                 for dataset in sorted({r.dataset for r in rows}) for model in models]
    counts = Counter(r.status for r in rows)
    return PaperSection(paper=paper, info=info, headline_metric=metric, headline_models=models,
                        headlines=headlines, rows=rows, counts={s: counts.get(s, 0) for s in STATUSES},
                        figures=_figures(root, paper), links=_links(root, paper),
                        claims=list(claims) if claims is not None else claims_of(root, paper))


def generation_stamp(root: Path) -> tuple[str | None, str]:
    """(commit, date) of the checkout holding ``root``: the newest commit of the code the pages come from (every
    path but results/) and its committer date, never the clock or HEAD, so that ``make report`` writes the same
    bytes at one code state and committing the pages (or a new result) does not move the stamp: a run changes only
    its own result and what derives from it. Outside a git checkout: (None, today in UTC)."""
    try:
        out = subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%H %cI", "--", ":/",
                              ":(top,exclude)results"], capture_output=True,
                             text=True, timeout=10, check=True).stdout.split()
        return out[0], out[1][:10]
    except (OSError, subprocess.SubprocessError, IndexError):
        return None, datetime.now(timezone.utc).date().isoformat()


def build_report(root: Path, papers_dir: Path, claims: Mapping[str, list[Claim]] | None = None) -> Report:
    """Every page's content; ``claims``: {paper: its claims} as the hooks returned them in this process (a paper
    missing from it has its claims read from the claims.json an earlier run wrote)."""
    claims = claims or {}
    records, unfinished, unreadable, failed = scan(root)
    papers = [section(root, paper, [r for r in records if r["paper"] == paper], papers_dir, claims.get(paper))
              for paper in sorted({r["paper"] for r in records})]
    packages = sorted(p.parent.name for p in papers_dir.glob("*/paper.yaml"))
    failed_papers = {f.split("/", 1)[0] for f in failed}  # listed as failed, so not "no results yet"
    without = tuple(p for p in packages if p not in {s.paper for s in papers} | failed_papers)
    machines: dict[str, list[str]] = {}
    for r in records:
        for cpu in record_cpus(r):
            machines.setdefault(cpu, []).append(f"{r['paper']}/{r['dataset']}/{r['model']}")
    commit, date = generation_stamp(root)
    return Report(papers=papers, unfinished=unfinished, unreadable=unreadable, failed=failed,
                  machines=dict(sorted(machines.items())), without_results=without, commit=commit, date=date)
