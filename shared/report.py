"""``python -m shared.report [results_dir]``: regenerate the results pages from the result files.

Writes, all atomically: results/README.md (first screen: the headline metric of each paper's model per
dataset, then one section per paper with baselines and figures), results/index.html (the same, plots
inline), results/<paper>/RESULTS.md (every test metric) and results/<paper>/reproduced_vs_reported.png.
Only ``"complete": true`` full-scale files count; partial ones are listed as unfinished.
"""

from __future__ import annotations

import sys
from pathlib import Path

from shared.atomic import write_text_atomic
from shared.report_data import DETAIL_NAME, PLOT_NAME, Report, build_report, load_results  # noqa: F401
from shared.report_html import render_html
from shared.report_md import render_index, render_paper
from shared.report_plot import plot_paper

ROOT = Path(__file__).resolve().parents[1] / "results"


def write_report(root: Path = ROOT, papers_dir: Path | None = None, plots: bool = True) -> Report:
    """Build every page under ``root`` (reading paper.yaml files from ``papers_dir``, default
    ``root/../replications``); ``plots=False`` skips matplotlib (the pages still link the plot paths)."""
    report = build_report(root, papers_dir or root.parent / "replications")
    for s in report.papers:
        if plots:
            plot_paper(s.paper, s.rows, s.headline_models, root / s.paper / PLOT_NAME)
        write_text_atomic(root / s.paper / DETAIL_NAME, render_paper(s))
    write_text_atomic(root / "README.md", render_index(report))
    write_text_atomic(root / "index.html", render_html(report))
    return report


def main(argv: list[str] | None = None) -> int:
    root = Path(argv[0]) if argv else ROOT
    report = write_report(root)
    print(render_index(report))
    print(f"wrote {root / 'README.md'}, {root / 'index.html'} and per-paper {DETAIL_NAME} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
