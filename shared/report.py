"""Regenerate the results pages from the result files (``make report``: replications.report hands in each
paper's ``report()`` hook; shared never imports a paper).

Writes, all atomically, in this order:
1. each result record's stored ``comparison``, recomputed against its paper.yaml as it is now (a reference
   added after a run is judged without re-running; a stale stored status is never trusted);
2. each paper's own page from its hook: results/<paper>/README.md, claims.json and figures (shared.report_paper);
3. results/README.md (first screen: each paper's central claims and numbers with their status; then every
   number that has a reference, and the claims in full), results/index.html (the same, plots inline),
   results/<paper>/RESULTS.md (every metric) with its reproduced_vs_reported.png, and results/index.json/.csv.
Only finished full-scale files (``"complete": true``, or a merge naming its missing seeds) reach the shared tables;
partial ones are listed as unfinished.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from shared import progress
from shared.atomic import write_json_atomic, write_text_atomic
from shared.data import DataError
from shared.paper_report import PaperReport, PaperResults, load_paper_results
from shared.paths import RESULTS
from shared.reference import load_paper, recompare
from shared.report_data import DETAIL_NAME, PLOT_NAME, Report, build_report, load_results, scan  # noqa: F401
from shared.report_format import claim_line, line, verdict_line, verdicts
from shared.report_html import render_html
from shared.report_index import write_index
from shared.report_md import render_index, render_paper
from shared.report_paper import write_paper
from shared.report_plot import plot_paper
from shared.stats import aggregate

ROOT = RESULTS
Hook = Callable[[PaperResults], PaperReport | None]


def fresh_aggregate(record: dict) -> dict | None:
    """The record's aggregate recomputed from its stored runs (shared.stats: one std convention, ddof=1), or
    None when its runs do not all carry the same metrics (then the stored one stands)."""
    runs = [r.get("metrics") for r in record.get("runs") or []]
    if not runs or any(not isinstance(m, dict) or set(m) != set(runs[0]) for m in runs):
        return None
    return aggregate(runs)


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
    done = []
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
            done.append(paper)
    return done


def write_report(root: Path = ROOT, papers_dir: Path | None = None, plots: bool = True,
                 hooks: Mapping[str, Hook] | None = None) -> Report:
    """Build every page under ``root`` (paper.yaml files from ``papers_dir``, default ``root/../replications``)."""
    papers_dir = papers_dir or root.parent / "replications"  # the checkout holding this results folder
    refresh_comparisons(root, papers_dir)
    write_paper_pages(root, hooks or {}, plots=plots)
    report = build_report(root, papers_dir)
    for s in report.papers:
        if plots:
            plot_paper(s.paper, s.rows, s.headline_models, root / s.paper / PLOT_NAME)
        write_text_atomic(root / s.paper / DETAIL_NAME, render_paper(s))
    write_text_atomic(root / "README.md", render_index(report))
    write_text_atomic(root / "index.html", render_html(report))
    write_index(root, report)
    return report


def summary(report: Report) -> str:
    """The terminal's view: every row and claim, in the page's words, and last the first screen's verdicts."""
    lines = ["rows:"] + [line(r) for s in report.papers for r in s.rows]
    lines += ["claims:"] + [claim_line(s.paper, c) for s in report.papers for c in s.claims]
    lines += ["verdicts (the first screen):"] + [verdict_line(v) for s in report.papers for v in verdicts(s)]
    if report.without_results:
        lines.append(f"no results yet: {', '.join(report.without_results)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None, hooks: Mapping[str, Hook] | None = None) -> int:
    root = Path(argv[0]) if argv else ROOT
    report = write_report(root, hooks=hooks)
    print(summary(report))
    print(f"wrote {root / 'README.md'}, {root / 'index.html'}, {root / 'index.json'} and per-paper pages")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
