"""Markdown pages: results/README.md (first screen: each paper's central claims and numbers with their status,
marked by tone; then the numbers and the claims in full; then one section per paper) and
results/<paper>/RESULTS.md (every test metric with its sources and hardware)."""

from __future__ import annotations

from pathlib import PurePosixPath

from shared import report_format as f
from shared.report_data import PaperSection, Report, Row
from shared.verdict import TONE


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]


def _ref(row: Row) -> list[str]:
    """status, reproduced, reference, kind of a number row."""
    return [_status(row.status), f.reproduced(row), f.num(row.reported, row.mean),
            f"`{row.kind}`" if row.kind else f.DASH]


def _status(status: str) -> str:
    return f"{f.MARK[TONE[status]]} **{status}**"


def _verdict_table(report: Report) -> list[str]:
    rows = [[f"[{s.paper}](#{s.paper})" if i == 0 else "", _status(v.status), v.text, v.evidence]
            for s in report.papers for i, v in enumerate(f.verdicts(s))]
    return _table(["paper", "status", "central claim or number", "evidence"], rows)


def _numbers_table(report: Report) -> list[str]:
    rows = []
    for s in report.papers:
        for i, r in enumerate(f.number_rows(s)):
            rows.append([f"[{s.paper}](#{s.paper})", _status(r.status), r.dataset, r.model, r.metric,
                         f.reproduced(r), f.num(r.reported, r.mean), f"`{r.kind}`" if r.kind else f.DASH,
                         f.counts(s) if i == 0 else ""])
    return _table(["paper", "status", "dataset", "model", "metric", "reproduced (mean ± std, n)", "reference", "kind",
                   f.COUNTS_HEADER], rows)


def _claims_table(report: Report) -> list[str]:
    rows = [[f"[{s.paper}](#{s.paper})", _status(c.status), c.text, f.evidence(c), c.source,
             {True: "yes", False: "no"}.get(c.verified, f.DASH)] for s in report.papers for c in s.claims]
    if not rows:
        return []
    return [f.CLAIMS_NOTE + "\n", *_table(["paper", "status", "claim", "evidence", "source", "verified"], rows), ""]


def _machines(report: Report) -> list[str]:
    lines = ["**Machines.** Every CPU that ran a seed of a row on this page, and the result files it ran:\n"]
    for cpu, files in report.machines.items():
        lines.append(f"- {f.machine(cpu, files)}")
    return lines + [""]


def _paper_section(s: PaperSection) -> list[str]:
    info, code = s.info, s.info.get("code") or {}
    lines = [f"## {s.paper}\n"]
    if info.get("title"):
        where = (f"official code {code['url']}" + (f" @ {str(code['commit'])[:10]}" if code.get("commit") else "")
                 if code.get("url") else "no official code")
        lines.append(f"*{info['title']}* ({info.get('venue', '')}); {where}.\n")
    pages = ", ".join(f"[{PurePosixPath(p).name}]({p})" for p in s.links)
    lines.append(f"Headline: `{s.headline_metric}` of {f.headline_models(s)}. Every test metric with sources and "
                 f"hardware, and the paper's own pages: {pages}.\n")
    by_key = {(r.dataset, r.model): r for r in s.rows if r.metric == s.headline_metric}
    models = list(s.headline_models) + sorted({m for _, m in by_key} - set(s.headline_models))
    rows = [[d, m, *_ref(by_key[d, m])] for d in sorted({d for d, _ in by_key}) for m in models if (d, m) in by_key]
    lines += [f"Baselines on `{s.headline_metric}`:\n", *_table(
        ["dataset", "model", "status", "reproduced (mean ± std, n)", "reference", "kind"], rows), ""]
    lines += [f"![{PurePosixPath(p).stem}]({p})\n" for p in s.figures]
    return lines


def render_index(report: Report) -> str:
    parts = ["# Results\n", f"{f.stamp(report)}. Status by tone: {f.tone_legend()}. "
             "The same page with the plots inline: [index.html](index.html).\n",
             *_verdict_table(report), "", f.VERDICTS_NOTE + "\n",
             f.NUMBERS_NOTE + "\n", *_numbers_table(report), "", *_claims_table(report), f.INTRO + "\n"]
    parts.append("**Reference kinds**, strongest first: " + "; ".join(
        f"`{k}`: {v}" for k, v in f.kind_legend()) + ". Each row names the kind it was judged against.\n")
    if report.without_results:
        parts.append(f"**No results yet** (a package, no complete result file): {', '.join(report.without_results)}.\n")
    parts += _machines(report)
    if report.unfinished:
        parts.append("**Unfinished runs** (not in the tables; `make replicate-<paper>` resumes them):\n")
        parts += [f"- {u}" for u in report.unfinished] + [""]
    if report.unreadable:
        parts.append("**Unreadable result files** (not in the tables):\n")
        parts += [f"- {u}" for u in report.unreadable] + [""]
    if report.failed:
        parts.append(f"**{f.FAILED_TITLE}**:\n")
        parts += [f"- {u}" for u in report.failed] + [""]
    for s in report.papers:
        parts += _paper_section(s)
    return "\n".join(parts)


def render_paper(s: PaperSection) -> str:
    """The long per-metric table of one paper (what the first screen used to be)."""
    info = s.info
    parts = [f"# {s.paper}: every test metric\n",
             "Generated by `make report`; do not edit by hand. Back to [all papers](../README.md).\n"]
    if info.get("title"):
        parts.append(f"*{info['title']}* ({info.get('venue', '')}).\n")
    if info.get("notes"):
        parts.append(info["notes"].strip() + "\n")
    rows = [[r.dataset, r.model, r.metric, f.reproduced(r), f.num(r.reported, r.mean), r.kind or f.DASH,
             f.source(r), {True: "yes", False: "no", None: f.DASH}[r.verified], f.difference(r), r.status,
             f.others(r), f.hardware(r), f"{r.wall_seconds / 60:.1f} min"] for r in s.rows]
    parts += _table(["dataset", "model", "metric", "reproduced (mean ± std, n)", "reference", "kind", "source",
                     "verified", "difference", "status", "other references", "hardware", "wall time"], rows)
    parts.append("")
    parts += [f"![{PurePosixPath(p).stem}](../{p})\n" for p in s.figures]
    return "\n".join(parts)

