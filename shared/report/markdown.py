"""Markdown pages: results/README.md (the first screen: per paper, its claims in their short sentences with status,
effect and interval, and scale ratio, and its referenced headline numbers; the forest plot; the papers' pages),
results/DETAILS.md (every number that has a reference, the claims in full, machines, one section per paper) and
results/<paper>/RESULTS.md (every test metric with its sources and hardware)."""

from __future__ import annotations

from pathlib import PurePosixPath

from shared.report import text as f
from shared.report.content import PaperSection, Report, Row
from shared.verdict import TONE


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]


def _ref(row: Row) -> list[str]:
    """status, reproduced, reference, kind of a number row."""
    return [status_cell(row.status), f.reproduced(row), f.num(row.reported, row.mean),
            f"`{row.kind}`" if row.kind else f.DASH]


DETAILS_MD = "DETAILS.md"


def status_cell(status: str, scale_note: str = "") -> str:
    """The status word marked by its tone; reached far below the claim's scale: the scaled marker and the note."""
    if scale_note:
        return f"{f.MARK[f.SCALED]} **{status}** {scale_note}"
    return f"{f.MARK[TONE[status]]} **{status}**"


def page_link(s: PaperSection) -> str:
    """The paper's own page (its README.md, verdicts first), else its RESULTS.md."""
    own = [p for p in s.links if p.endswith("/README.md")]
    return (own or s.links)[0]


def _verdict_table(report: Report) -> list[str]:
    rows = [[f"[{s.paper}]({page_link(s)})" if i == 0 else "", status_cell(v.status, v.scale_note), v.text, v.evidence,
             v.ratio] for s in report.papers for i, v in enumerate(f.verdicts(s))]
    return _table(["paper", "status", "claim or number", "effect [95% interval] or evidence", "scale here / claim's"],
                  rows)


def _numbers_table(report: Report) -> list[str]:
    rows = []
    for s in report.papers:
        for i, r in enumerate(f.number_rows(s)):
            caveat = f" (caveat: {r.caveat})" if r.caveat else ""
            rows.append([f"[{s.paper}](#{s.paper})", status_cell(r.status) + caveat, r.dataset, r.model, r.metric,
                         f.reproduced(r), f.num(r.reported, r.mean), f"`{r.kind}`" if r.kind else f.DASH,
                         f.counts(s) if i == 0 else ""])
    return _table(["paper", "status", "dataset", "model", "metric", "reproduced (mean ± std, n)", "reference", "kind",
                   f.COUNTS_HEADER], rows)


def _claims_table(report: Report) -> list[str]:
    rows = [[f"[{s.paper}](#{s.paper})", status_cell(c.status, c.scale_note), f.claim_words(c), c.text, f.evidence(c),
             f.scale_words(c), c.source, {True: "yes", False: "no"}.get(c.verified, f.DASH)]
            for s in report.papers for c in s.claims]
    if not rows:
        return []
    return [f.CLAIMS_NOTE + "\n", *_table(["paper", "status", "claim", "in the paper's words", "evidence", "scale",
                                           "source", "verified"], rows), ""]


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


def _left_out(report: Report) -> list[str]:
    """What is not in the tables, named: packages without results, unfinished, unreadable and failed files."""
    parts = []
    if report.without_results:
        parts.append(f"**No results yet** (a package, no complete result file): {', '.join(report.without_results)}.\n")
    for title, items in (("Unfinished runs** (not in the tables; `make replicate-<paper>` resumes them)", report.unfinished),
                         ("Unreadable result files** (not in the tables)", report.unreadable),
                         (f"{f.FAILED_TITLE}**", report.failed)):
        if items:
            parts += [f"**{title}:\n", *[f"- {u}" for u in items], ""]
    return parts


def render_index(report: Report, forest: str | None = None) -> str:
    """The summary page: a few screens. ``forest``: the forest plot's file beside the page (None: no judged claim)."""
    parts = ["# Results\n", f"{f.stamp(report)}. Status by tone: {f.tone_legend()}. "
             f"The same page with the plots inline: [index.html](index.html); every number with a reference, the "
             f"claims in full, the machines and each paper's baselines: [{DETAILS_MD}]({DETAILS_MD}).\n",
             *_verdict_table(report), "", f.VERDICTS_NOTE + "\n"]
    if forest:
        parts += [f"![forest plot of every judged claim]({forest})\n", f"*{f.FOREST_CAPTION}*\n"]
    parts.append("**Papers** (each page opens with its verdicts):\n")
    for s in report.papers:
        title = f" *{s.info['title']}* ({s.info.get('venue', '')})" if s.info.get("title") else ""
        pages = ", ".join(f"[{PurePosixPath(p).name}]({p})" for p in s.links)
        parts.append(f"- **{s.paper}**:{title}: {pages}")
    parts.append("")
    return "\n".join(parts + _left_out(report))


def render_details(report: Report) -> str:
    """Everything the summary leaves out: every referenced number, the claims in full, machines, and each paper."""
    parts = ["# Results in detail\n", f"{f.stamp(report)}. Back to [the summary](README.md).\n",
             f.NUMBERS_NOTE + "\n", *_numbers_table(report), "", *_claims_table(report), f.INTRO + "\n"]
    parts.append("**Reference kinds**, strongest first: " + "; ".join(
        f"`{k}`: {v}" for k, v in f.kind_legend()) + ". Each row names the kind it was judged against.\n")
    parts += _machines(report) + _left_out(report)
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

