"""results/index.html: the results page as one HTML file, plots inline, readable on a phone and a laptop.

Dependency-free (string building with html.escape), no JavaScript. CSS is inline; images are referenced
relatively (they sit beside the page under results/), not base64-inlined: the PNGs are committed anyway, so
inlining would store each one twice in git on every regeneration (~4 MB today) and make every report diff
a multi-megabyte blob. The first screen is each paper's verdict (shared.report_format.verdicts), status in the
second column and coloured by tone, sized to fit 800 px without scrolling; wider tables scroll horizontally
inside their own box so the page itself never does, and every status is the second column, in view.
"""

from __future__ import annotations

import re
from html import escape
from pathlib import PurePosixPath

from shared import report_format as f
from shared.reference import KINDS
from shared.report_data import PaperSection, Report, Row
from shared.verdict import TONE

CSS = """
:root { color-scheme: light dark; --ok: #1a7f37; --bad: #cf222e; --none: #6e7781; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto;
       max-width: 78rem; padding: 0.75rem; }
h1 { font-size: 1.3rem; margin: 0.2rem 0; } h2 { font-size: 1.25rem; margin-top: 2rem; border-bottom: 1px solid #8884; }
.scroll { overflow-x: auto; -webkit-overflow-scrolling: touch; margin: 0.5rem 0 1rem; }
table { border-collapse: collapse; font-size: 0.85rem; }
th, td { border: 1px solid #8885; padding: 0.25rem 0.45rem; text-align: left; vertical-align: top; }
th { background: #8882; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
.status { white-space: nowrap; font-weight: 600; border-radius: 0.3rem; padding: 0 0.3rem; }
.good { color: var(--ok); background: #1a7f3714; } .bad { color: var(--bad); background: #cf222e14; }
.neutral { color: var(--none); }
.meta { font-size: 0.8rem; color: var(--none); margin: 0 0 0.4rem; }
table.verdicts { width: 100%; table-layout: fixed; font-size: 0.76rem; line-height: 1.2; margin: 0; }
table.verdicts col.paper { width: 6.6rem; } table.verdicts col.status { width: 8.6rem; }
table.verdicts td { padding: 0.02rem 0.3rem; overflow-wrap: anywhere; }  /* tight rows: every verdict on the first screen */
table.verdicts tr.first td { border-top: 2px solid #8886; }
table.verdicts .ev { color: var(--none); }
table.verdicts .ev::before { content: "— "; }
td.wrap { min-width: 10rem; max-width: 32rem; overflow-wrap: anywhere; }
figure { margin: 0.75rem 0; } figure img { max-width: 100%; height: auto; display: block; }
figcaption { font-size: 0.8rem; color: var(--none); }
code { font-size: 0.9em; } abbr { text-decoration: underline dotted; cursor: help; }
details { margin: 0.5rem 0 1rem; } summary { cursor: pointer; font-weight: 600; }
p, li, figcaption { max-width: 60rem; overflow-wrap: anywhere; }  /* long URLs and paths wrap on a phone */
@media (max-width: 600px) { body { font-size: 14px; padding: 0.5rem; } table { font-size: 0.78rem; }
  th, td { padding: 0.2rem 0.3rem; } }
"""


def _e(text: object) -> str:
    return escape(str(text))


def _md(text: str) -> str:
    """A Markdown sentence (report_format's, shared with README.md) as HTML: escaped, `code` as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", _e(text))


def _table(header: list[str], rows: list[list[str]], numeric: set[int] = frozenset(),
           wrap: set[int] = frozenset()) -> str:
    """Cells are HTML already (escaped by the caller); ``numeric`` column indices are right-aligned, ``wrap``
    ones (long text) wrap within a bounded width."""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    cls = {**{i: ' class="num"' for i in numeric}, **{i: ' class="wrap"' for i in wrap}}
    body = "".join("<tr>" + "".join(f"<td{cls.get(i, '')}>{c}</td>" for i, c in enumerate(row)) + "</tr>"
                   for row in rows)
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _kind(kind: str | None) -> str:
    return f'<abbr title="{_e(KINDS[kind])}"><code>{_e(kind)}</code></abbr>' if kind in KINDS else _e(kind or f.DASH)


def _status(status: str) -> str:
    return f'<span class="status {TONE[status]}">{_e(status)}</span>'


def _ref(row: Row) -> list[str]:
    return [_status(row.status), _e(f.reproduced(row)), _e(f.num(row.reported, row.mean)), _kind(row.kind)]


def _verdict_table(report: Report) -> str:
    """One row group per paper (the paper's name spans its lines): status, then claim — evidence."""
    body = []
    for s in report.papers:
        found = f.verdicts(s)
        for i, v in enumerate(found):
            paper = (f'<td rowspan="{len(found)}"><a href="#{_e(s.paper)}"><b>{_e(s.paper)}</b></a></td>'
                     if i == 0 else "")
            body.append(f'<tr class="{"first" if i == 0 else ""}" data-paper="{_e(s.paper)}">{paper}'
                        f'<td class="verdict">{_status(v.status)}</td>'
                        f'<td title="{_e(v.full)}">{_md(v.text)} <span class="ev">{_md(v.evidence)}</span></td></tr>')
    return ('<table class="verdicts"><colgroup><col class="paper"><col class="status"><col></colgroup>'
            '<thead><tr><th>paper</th><th>status</th><th>central claim or number — evidence</th></tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def _numbers_table(report: Report) -> str:
    """Five columns, so that it fits 800 px: the paper (its rows counted by status under its name), the status,
    which number, the reproduction, the reference with its kind."""
    rows = []
    for s in report.papers:
        for i, r in enumerate(f.number_rows(s)):
            counts = f'<br><span class="meta" title="{_e(f.COUNTS_HEADER)}">{_e(f.counts(s))}</span>' if i == 0 else ""
            reference = _e(f.num(r.reported, r.mean)) + (f" {_kind(r.kind)}" if r.kind else "")
            rows.append([f'<a href="#{_e(s.paper)}">{_e(s.paper)}</a>{counts}', _status(r.status),
                         f"<code>{_e(r.metric)}</code> {_e(r.model)} on {_e(r.dataset)}", _e(f.reproduced(r)),
                         reference])
    return _table(["paper", "status", "number", "reproduced (mean ± std, n)", "reference (kind)"], rows,
                  numeric={3}, wrap={2})


def _figures(s: PaperSection) -> str:
    return "".join(
        f'<figure><a href="{_e(p)}"><img src="{_e(p)}" alt="{_e(s.paper)}: {_e(PurePosixPath(p).stem)}" '
        f'decoding="async"></a><figcaption>{_e(p)}</figcaption></figure>' for p in s.figures)


def _all_rows(s: PaperSection) -> str:
    rows = [[_e(r.dataset), _status(r.status), _e(r.model), f"<code>{_e(r.metric)}</code>", _e(f.reproduced(r)),
             _e(f.num(r.reported, r.mean)), _kind(r.kind), _e(f.source(r)), _e(f.difference(r)),
             _e(f.others(r)), _e(f.hardware(r)), _e(f"{r.wall_seconds / 60:.1f} min")] for r in s.rows]
    table = _table(["dataset", "status", "model", "metric", "reproduced (mean ± std, n)", "reference", "kind", "source",
                    "difference", "other references", "hardware", "wall time"], rows, numeric={4, 5, 8})
    return f"<details><summary>Every test metric ({len(s.rows)} rows)</summary>{table}</details>"


def _paper_section(s: PaperSection) -> str:
    info, code = s.info, s.info.get("code") or {}
    out = [f'<section id="{_e(s.paper)}"><h2>{_e(s.paper)}</h2>']
    if info.get("title"):
        commit = f" @ {_e(str(code['commit'])[:10])}" if code.get("commit") else ""
        url = _e(code.get("url") or "")
        where = f'official code <a href="{url}">{url}</a>{commit}' if url else "no official code"
        out.append(f"<p><em>{_e(info['title'])}</em> ({_e(info.get('venue', ''))}); {where}.</p>")
    pages = ", ".join(f'<a href="{_e(p)}">{_e(PurePosixPath(p).name)}</a>' for p in s.links)
    out.append(f"<p>Headline: <code>{_e(s.headline_metric)}</code> of {_e(f.headline_models(s))}. "
               f"Pages: {pages}.</p>")
    by_key = {(r.dataset, r.model): r for r in s.rows if r.metric == s.headline_metric}
    models = list(s.headline_models) + sorted({m for _, m in by_key} - set(s.headline_models))
    rows = [[_e(d), _e(m), *_ref(by_key[d, m])] for d in sorted({d for d, _ in by_key}) for m in models
            if (d, m) in by_key]
    out.append(f"<p>Baselines on <code>{_e(s.headline_metric)}</code>:</p>")
    out.append(_table(["dataset", "model", "status", "reproduced (mean ± std, n)", "reference", "kind"], rows,
                      numeric={3, 4}))
    out.append(_all_rows(s))
    out.append(_figures(s))
    return "".join(out) + "</section>"


def _claims_table(report: Report) -> str:
    rows = [[f'<a href="#{_e(s.paper)}">{_e(s.paper)}</a>', _status(c.status), _md(c.text), _md(f.evidence(c)),
             _e(c.source), {True: "yes", False: "no"}.get(c.verified, f.DASH)]
            for s in report.papers for c in s.claims]
    if not rows:
        return ""
    return (f"<p>{_bold(f.CLAIMS_NOTE)}</p>"
            + _table(["paper", "status", "claim", "evidence", "source", "verified"], rows, wrap={2, 3, 4}))


def _bold(text: str) -> str:
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", _md(text))


def _list(title: str, items: list[str]) -> str:
    return f"<p><strong>{_e(title)}</strong></p><ul>" + "".join(f"<li>{_e(i)}</li>" for i in items) + "</ul>"


def render_html(report: Report) -> str:
    legend = "; ".join(f"<code>{_e(k)}</code>: {_e(v)}" for k, v in f.kind_legend())
    machines = [f.machine(cpu, files) for cpu, files in report.machines.items()]
    tones = "; ".join(f'<span class="status {t}">{_e(t)}</span>: {_e(f.TONE_WORDS[t])}' for t in f.MARK)
    body = [
        "<h1>Results: a verdict per published claim</h1>",
        f'<p class="meta">{_md(f.stamp(report))}. {tones}. Markdown version: <a href="README.md">README.md</a>.</p>',
        _verdict_table(report), f'<p class="meta">{_e(f.VERDICTS_NOTE)}</p>',
        f"<p>{_bold(f.NUMBERS_NOTE)}</p>", _numbers_table(report), _claims_table(report),
        f"<p>{_md(f.INTRO)}</p>",
        f"<p><strong>Reference kinds</strong>, strongest first: {legend}. "
        "Each row names the kind it was judged against.</p>",
        _list("Machines: every CPU that ran a seed of a row on this page", machines),
    ]
    if report.unfinished:
        body.append(_list("Unfinished runs (not in the tables; make replicate-<paper> resumes them)", report.unfinished))
    if report.unreadable:
        body.append(_list("Unreadable result files (not in the tables)", report.unreadable))
    if report.failed:
        body.append(_list(f.FAILED_TITLE, report.failed))
    body += [_paper_section(s) for s in report.papers]
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>Replication results</title><style>{CSS}</style></head>\n<body>\n"
            + "\n".join(body) + "\n</body></html>\n")
