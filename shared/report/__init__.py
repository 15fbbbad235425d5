"""Regenerate the results pages from the result files (``make report``: replications.report hands in each
paper's ``report()`` hook; shared never imports a paper).

The report layer, one module per job:
- ``__init__``: ``write_report`` and ``main``, every page in the order below (the hooks come from replications.report);
- ``__main__``: ``python -m shared.report [results_dir] [--full]``, the same without any paper's hook;
- ``paper_hook``: what a paper's ``report()`` hook receives and returns (PaperResults in; PaperReport, Claim, Table,
  Figure, Block out);
- ``paper_page``: writes one paper's PaperReport: results/<paper>/README.md, claims.json and its figures;
- ``blocks``: small pieces the papers' pages build alike (number cells, mean ± std, wall-time, hardware, commits,
  a dataset's records in a paper's order, the official code's runs beside the suite's, boxes on images);
- ``columns``: a table built column by column (a header and a cell function each), and the columns of records
  several papers share;
- ``figures``: a paper's figures as data (a Plot of Panels) and the one ``draw`` that renders them;
- ``content``: what the shared pages show (Report, PaperSection, Row), computed once from the result files;
- ``text``: the plain-text cells and sentences the Markdown and HTML pages share;
- ``markdown``: results/README.md, DETAILS.md and results/<paper>/RESULTS.md;
- ``html``: results/index.html and details.html;
- ``plot``: each paper's reproduced_vs_reported.png, and ``fixed_style`` (the same pixels on any machine);
- ``forest``: results/forest.png, every judged claim's effect with its interval;
- ``index``: results/index.json and index.csv.

Writes, all atomically, in this order:
1. each result record's stored ``comparison``, recomputed against its paper.yaml as it is now (a reference
   added after a run is judged without re-running; a stale stored status is never trusted);
2. each paper's own page from its hook: results/<paper>/README.md, claims.json and figures (shared.report.paper_page);
   the claims the hooks return are handed on in memory (claims.json is read back only for a paper whose hook did
   not run here);
3. results/README.md and results/index.html (the first screen: per paper, its claims in their short sentences
   with status, effect and interval, and scale ratio, then its referenced headline numbers; the forest plot
   results/forest.png of every judged claim), results/DETAILS.md and details.html (every number that has a
   reference, the claims in full, machines, each paper's baselines and figures), results/<paper>/RESULTS.md (every
   metric) with its reproduced_vs_reported.png, and results/index.json/.csv.
Only finished full-scale files (``"complete": true``, or a merge naming its missing seeds) reach the shared tables;
partial ones are listed as unfinished, and finished ones with a non-finite metric as failed (never ``nan ± nan``).
Before anything is written, every paper.yaml is checked (shared.reference.load_paper) and the folder must hold
result files: a bad file or a mistyped folder is one line (exit 2) and the pages stay as they are.
The terminal gets one line of counts; ``--full`` prints every row and claim as well.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path

from shared import progress
from shared.atomic import write_json_atomic, write_text_atomic
from shared.config_check import one_line
from shared.data import DataError
from shared.paths import RESULTS
from shared.reference import load_paper, recompare
from shared.report.content import DETAIL_NAME, PLOT_NAME, Report, build_report, load_results, scan  # noqa: F401
from shared.report.forest import FOREST_NAME, forest_rows, plot_forest
from shared.report.html import DETAILS_HTML, render_details_html, render_html
from shared.report.index import write_index
from shared.report.markdown import DETAILS_MD, render_details, render_index, render_paper
from shared.report.paper_hook import Claim, PaperReport, PaperResults, load_paper_results
from shared.report.paper_page import write_paper
from shared.report.plot import plot_paper
from shared.report.text import claim_line, line, verdict_line, verdicts
from shared.stats import aggregate
from shared.verdict import CLAIM_STATUSES, NUMBER_STATUSES

ROOT = RESULTS
Hook = Callable[[PaperResults], PaperReport | None]


def fresh_aggregate(record: dict) -> dict | None:
    """The record's aggregate recomputed from its stored runs (shared.stats: one std convention, ddof=1), or
    None when its runs do not all carry the same metrics (then the stored one stands)."""
    runs = [r.get("metrics") for r in record.get("runs") or []]
    if not runs or any(not isinstance(m, dict) or set(m) != set(runs[0]) for m in runs):
        return None
    return aggregate(runs)


class ReportError(ValueError):
    """A results folder the report cannot build pages from; the message says which and what to give instead."""


def check_inputs(root: Path, papers_dir: Path) -> None:
    """Refuse, before any page or record is written: a folder holding no result files (a mistyped path would
    otherwise get a complete-looking site with zero papers), or any paper.yaml that fails its check."""
    if not root.is_dir() or not any(root.glob("*/*/*.json")):
        why = "does not exist" if not root.exists() else "holds no result files (<paper>/<dataset>/<model>.json)"
        raise ReportError(f"{root} {why}; give the results folder (default: results/), or run a paper first")
    for path in sorted(papers_dir.glob("*/paper.yaml")):
        load_paper(path, results_root=root)  # a PaperFileError names the file, the paper, the key and the fix


def refresh_comparisons(root: Path, papers_dir: Path) -> list[Path]:
    """Rewrite every complete record whose stored aggregate (an older std convention) or comparison (paper.yaml
    judges it differently now) is stale: recomputed from its runs and the paper file, never trusted as stored."""
    changed = []
    for record in scan(root)[0]:
        paper_file = papers_dir / record["paper"] / "paper.yaml"
        if not paper_file.exists():
            continue
        agg = fresh_aggregate(record) or record["aggregate"]
        fresh = recompare({**record, "aggregate": agg}, load_paper(paper_file, results_root=root))
        stale = [json.dumps(a, default=str) != json.dumps(b, default=str)
                 for a, b in ((fresh, record.get("comparison")), (agg, record.get("aggregate")))]
        if any(stale):
            path = root / record["paper"] / record["dataset"] / f"{record['model']}.json"
            write_json_atomic(path, {**record, "aggregate": agg, "comparison": fresh})
            changed.append(path)
    return changed


def write_paper_pages(root: Path, hooks: Mapping[str, Hook], plots: bool = True) -> list[str]:
    """Every paper's own page from its hook; returns the papers that have one."""
    return list(run_hooks(root, hooks, plots))


def run_hooks(root: Path, hooks: Mapping[str, Hook], plots: bool = True) -> dict[str, list[Claim]]:
    """Every paper's own page from its hook; returns {paper: the claims its hook judged}, handed on in memory to the
    shared pages (the claims.json written here is for readers and for a later run whose hook cannot run)."""
    done: dict[str, list[Claim]] = {}
    for paper, hook in sorted(hooks.items()):
        results = load_paper_results(root, paper)
        if not results.records:
            continue
        try:
            report = hook(results)
        except DataError as exc:  # a page that reads its dataset (example forms, unit statistics) without it here
            first = str(exc).splitlines()[0]
            progress.write(f"warning: {paper}: its page needs data that is not here, so the existing page and "
                           f"claims stay as they are ({first}); set REPLICATIONS_MIRROR to rebuild it", file=sys.stderr)
            continue
        if report is not None:
            write_paper(root / paper, paper, report, plots=plots)
            done[paper] = list(report.claims)
    return done


def write_report(root: Path = ROOT, papers_dir: Path | None = None, plots: bool = True,
                 hooks: Mapping[str, Hook] | None = None) -> Report:
    """Build every page under ``root`` (paper.yaml files from ``papers_dir``, default ``root/../replications``)."""
    papers_dir = papers_dir or root.parent / "replications"  # the checkout holding this results folder
    check_inputs(root, papers_dir)
    refresh_comparisons(root, papers_dir)
    claims = run_hooks(root, hooks or {}, plots=plots)
    report = build_report(root, papers_dir, claims)
    rows = forest_rows(report, papers_dir)
    for s in report.papers:
        if plots:
            plot_paper(s.paper, s.rows, s.headline_models, root / s.paper / PLOT_NAME)
        write_text_atomic(root / s.paper / DETAIL_NAME, render_paper(s))
    if plots and rows:
        plot_forest(rows, root / FOREST_NAME)
    forest = FOREST_NAME if rows else None
    write_text_atomic(root / "README.md", render_index(report, forest))
    write_text_atomic(root / DETAILS_MD, render_details(report))
    write_text_atomic(root / "index.html", render_html(report, forest))
    write_text_atomic(root / DETAILS_HTML, render_details_html(report))
    write_index(root, report)
    return report


def summary(report: Report) -> str:
    """The terminal's view: every row and claim, in the page's words, and last the first screen's verdicts."""
    lines = ["rows:"] + [line(r) for s in report.papers for r in s.rows]
    lines += ["claims:"] + [claim_line(s.paper, c) for s in report.papers for c in s.claims]
    lines += ["verdicts (the first screen):"] + [verdict_line(v) for s in report.papers for v in verdicts(s)]
    if report.without_results:
        lines.append(f"no results yet: {', '.join(report.without_results)}")
    lines += [f"failed run: {failed}" for failed in report.failed]
    return "\n".join(lines)


def counts_line(report: Report, root: Path) -> str:
    """The terminal's one line: papers, numbers and claims counted by status, anything left out, and the page."""
    def by_status(statuses: tuple[str, ...], found: list[str]) -> str:
        counted = Counter(found)
        return f" ({', '.join(f'{counted[s]} {s}' for s in statuses if counted[s])})" if found else ""

    rows = [r.status for s in report.papers for r in s.rows]
    claims = [c.status for s in report.papers for c in s.claims]
    parts = [f"{len(report.papers)} papers", f"{len(rows)} numbers{by_status(NUMBER_STATUSES, rows)}",
             f"{len(claims)} claims{by_status(CLAIM_STATUSES, claims)}"]
    if report.failed:  # named here too: a failed run is news, not a count to look up
        names = [f.split(": ", 1)[0] for f in report.failed]
        parts.append(f"{len(names)} failed ({', '.join(names[:3])}{', …' if len(names) > 3 else ''})")
    for label, items in (("unfinished", report.unfinished), ("unreadable", report.unreadable),
                         ("without results", report.without_results)):
        if items:
            parts.append(f"{len(items)} {label}")
    page = root / "index.html"
    if page.is_absolute() and not os.path.relpath(page).startswith(".."):
        page = Path(os.path.relpath(page))  # results/index.html from the checkout, as make report runs it
    return f"report: {', '.join(parts)} -> {page.as_posix()}"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m replications.report",
                                     description="Build every results page from the result files.")
    parser.add_argument("results", nargs="?", type=Path, default=None, help="the results folder (default: results/)")
    parser.add_argument("--full", action="store_true", help="also print every row and claim (the pages' words)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None, hooks: Mapping[str, Hook] | None = None) -> int:
    args = parse_args(argv or [])
    root = args.results or ROOT
    try:
        report = write_report(root, hooks=hooks)
    except ValueError as exc:  # a bad paper.yaml, a folder without results, a claims file with an unknown status
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    if args.full:
        print(summary(report))
    print(counts_line(report, root))
    return 0

