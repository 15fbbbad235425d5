"""Write one paper's ``PaperReport``: results/<paper>/README.md, claims.json and its figures, atomically."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from shared import progress
from shared.atomic import save_figure_atomic, write_json_atomic, write_text_atomic
from shared.data import DataError
from shared.report.markdown import status_cell
from shared.report.paper_hook import CLAIMS_NAME, PAGE_NAME, Block, Figure, PaperReport, Table
from shared.report.text import claim_evidence, claim_words, evidence, scale_words
from shared.report.trend import trend_blocks


def cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(table: Table) -> list[str]:
    lines = [f"**{table.title}**\n"] if table.title else []
    lines += ["| " + " | ".join(cell(h) for h in table.header) + " |", "|" + "---|" * len(table.header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in table.rows]
    return lines + ([f"\n{table.note}"] if table.note else [])


def claims_table(report: PaperReport) -> Table:
    """The page's verdict table: each claim in its short sentence, the status (with the scale reached where that is far
    below the claim's), the effect with its interval, both scales, then the paper's words, the evidence in full (the
    rule, the caveat) and the source."""
    rows = [[claim_words(c), status_cell(c.status, c.scale_note), claim_evidence(c), scale_words(c), c.text,
             evidence(c), c.source, {True: "yes", False: "no"}.get(c.verified, "—")] for c in report.claims]
    return Table(["claim", "status", "effect [95% interval]", "scale here / claim's", "in the paper's words",
                  "evidence", "source", "verified"], rows)


def page_blocks(report: PaperReport) -> list[Block]:
    """The paper's blocks with the claims' verdicts right under the page's title (its first block) so a reader sees
    them first, then how the effects move with model size where a claim was measured at several sizes."""
    blocks: list[Block] = list(report.blocks)
    if report.claims:
        verdicts = ["## Verdicts", claims_table(report), *trend_blocks(report.claims)]
        at = 1 if blocks and isinstance(blocks[0], str) and blocks[0].lstrip().startswith("# ") else 0
        blocks[at:at] = verdicts
    return blocks


def render_page(paper: str, report: PaperReport) -> str:
    """The page's blocks (page_blocks) in order; the same Claim objects go to claims.json, the index and the
    terminal."""
    parts = []
    for block in page_blocks(report):
        if isinstance(block, Table):
            parts.append("\n".join(markdown_table(block)))
        elif isinstance(block, Figure):
            parts.append(f"![{block.caption or Path(block.name).stem}]({block.name})")
        else:
            parts.append(block.rstrip("\n"))
    return "\n\n".join(parts) + "\n"


def claims_json(paper: str, report: PaperReport) -> dict[str, Any]:
    return {"paper": paper, "claims": [c.as_json() for c in report.claims], "data": report.data}


def write_paper(folder: Path, paper: str, report: PaperReport, plots: bool = True) -> list[Path]:
    """Every file of the paper's own page under ``folder`` (= <results root>/<paper>); returns their paths."""
    written = []
    if plots:
        for figure in [b for b in page_blocks(report) if isinstance(b, Figure)]:
            try:
                drawn = figure.draw()
            except DataError as exc:  # a figure of the data itself (an example page) needs the dataset at hand
                kept = "keeps the existing file" if (folder / figure.name).exists() else "is not drawn"
                first = str(exc).splitlines()[0]
                progress.write(f"warning: {paper}: figure {figure.name} {kept}: its data is not here ({first})", file=sys.stderr)
                continue
            save_figure_atomic(drawn, folder / figure.name, dpi=figure.dpi)
            written.append(folder / figure.name)
    if report.blocks:
        write_text_atomic(folder / PAGE_NAME, render_page(paper, report))
        written.append(folder / PAGE_NAME)
    write_json_atomic(folder / CLAIMS_NAME, claims_json(paper, report))
    return [*written, folder / CLAIMS_NAME]
