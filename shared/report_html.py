"""results/index.html: the results page as one HTML file, plots inline, readable on a phone and a laptop.

Dependency-free (string building with html.escape), no JavaScript. CSS is inline; images are referenced
relatively (they sit beside the page under results/), not base64-inlined: the PNGs are committed anyway, so
inlining would store each one twice in git on every regeneration (~4 MB today) and make every report diff
a multi-megabyte blob. Tables scroll horizontally inside their own box so the page itself never does.
"""

from __future__ import annotations

from html import escape
from pathlib import PurePosixPath

from shared import report_format as f
from shared.reference import KINDS, NO_REFERENCE, NOT_REPRODUCED, REPRODUCED
from shared.report_data import PaperSection, Report, Row

CSS = """
:root { color-scheme: light dark; --ok: #1a7f37; --bad: #cf222e; --none: #6e7781; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto;
       max-width: 78rem; padding: 0.75rem; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.25rem; margin-top: 2rem; border-bottom: 1px solid #8884; }
.scroll { overflow-x: auto; -webkit-overflow-scrolling: touch; margin: 0.5rem 0 1rem; }
table { border-collapse: collapse; font-size: 0.85rem; }
th, td { border: 1px solid #8885; padding: 0.25rem 0.45rem; text-align: left; vertical-align: top; }
th { background: #8882; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
.status { white-space: nowrap; font-weight: 600; }
.reproduced { color: var(--ok); } .not-reproduced { color: var(--bad); } .no-reference, .not-run { color: var(--none); }
figure { margin: 0.75rem 0; } figure img { max-width: 100%; height: auto; display: block; }
figcaption { font-size: 0.8rem; color: var(--none); }
code { font-size: 0.9em; } abbr { text-decoration: underline dotted; cursor: help; }
details { margin: 0.5rem 0 1rem; } summary { cursor: pointer; font-weight: 600; }
p, li, figcaption { max-width: 60rem; overflow-wrap: anywhere; }  /* long URLs and paths wrap on a phone */
@media (max-width: 600px) { body { font-size: 14px; padding: 0.5rem; } table { font-size: 0.78rem; }
  th, td { padding: 0.2rem 0.3rem; } }
"""
STATUS_CLASS = {REPRODUCED: "reproduced", NOT_REPRODUCED: "not-reproduced", NO_REFERENCE: "no-reference"}


def _e(text: object) -> str:
    return escape(str(text))


def _table(header: list[str], rows: list[list[str]], numeric: set[int] = frozenset()) -> str:
    """Cells are HTML already (escaped by the caller); ``numeric`` column indices are right-aligned."""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>"
                         for i, c in enumerate(row)) + "</tr>"
        for row in rows)
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _kind(kind: str | None) -> str:
    return f'<abbr title="{_e(KINDS[kind])}"><code>{_e(kind)}</code></abbr>' if kind in KINDS else _e(kind or f.DASH)


def _status(status: str) -> str:
    return f'<span class="status {STATUS_CLASS.get(status, "")}">{_e(status)}</span>'


def _ref(row: Row | None) -> list[str]:
    if row is None:
        return ['<span class="status not-run">not run</span>', f.DASH, f.DASH, f.DASH]
    return [_e(f.reproduced(row)), _e(f.num(row.reported, row.mean)), _kind(row.kind), _status(row.status)]


def _headline_table(report: Report) -> str:
    rows = []
    for s in report.papers:
        for i, h in enumerate(s.headlines):
            rows.append([f'<a href="#{_e(s.paper)}">{_e(s.paper)}</a>', _e(h.dataset), _e(h.model),
                         f"<code>{_e(h.metric)}</code>", *_ref(h.row), _e(f.counts(s)) if i == 0 else ""])
    return _table(["paper", "dataset", "model", "metric", "reproduced (mean ± std, n)", "reference", "kind",
                   "status", f.COUNTS_HEADER], rows, numeric={4, 5, 8})


def _figures(s: PaperSection) -> str:
    return "".join(
        f'<figure><a href="{_e(p)}"><img src="{_e(p)}" alt="{_e(s.paper)}: {_e(PurePosixPath(p).stem)}" '
        f'decoding="async"></a><figcaption>{_e(p)}</figcaption></figure>' for p in s.figures)


def _all_rows(s: PaperSection) -> str:
    rows = [[_e(r.dataset), _e(r.model), f"<code>{_e(r.metric)}</code>", _e(f.reproduced(r)),
             _e(f.num(r.reported, r.mean)), _kind(r.kind), _e(f.source(r)), _e(f.difference(r)), _status(r.status),
             _e(f.others(r)), _e(f.hardware(r)), _e(f"{r.wall_seconds / 60:.1f} min")] for r in s.rows]
    table = _table(["dataset", "model", "metric", "reproduced (mean ± std, n)", "reference", "kind", "source",
                    "difference", "status", "other references", "hardware", "wall time"], rows, numeric={3, 4, 7})
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
    out.append(_table(["dataset", "model", "reproduced (mean ± std, n)", "reference", "kind", "status"], rows,
                      numeric={2, 3}))
    out.append(_all_rows(s))
    out.append(_figures(s))
    return "".join(out) + "</section>"


def _claims_table(report: Report) -> str:
    rows = [[f'<a href="#{_e(s.paper)}">{_e(s.paper)}</a>', _e(c.text), _e(c.source),
             {True: "yes", False: "no"}.get(c.verified, f.DASH), _e(c.status), _e(f.evidence(c))]
            for s in report.papers for c in s.claims]
    if not rows:
        return ""
    return ("<p><b>Claims</b> that are not one table number (speed-ups, directions), with the status each paper's "
            "protocol measured for them:</p>" + _table(["paper", "claim", "source", "verified", "status", "evidence"], rows))


def _list(title: str, items: list[str]) -> str:
    return f"<p><strong>{_e(title)}</strong></p><ul>" + "".join(f"<li>{_e(i)}</li>" for i in items) + "</ul>"


def render_html(report: Report) -> str:
    legend = "; ".join(f"<code>{_e(k)}</code>: {_e(v)}" for k, v in f.kind_legend())
    machines = [f.machine(cpu, files) for cpu, files in report.machines.items()]
    body = [
        "<h1>Results</h1>", f"<p>{_e(f.INTRO)} Markdown version: <a href=\"README.md\">README.md</a>.</p>",
        _headline_table(report), f"<p>{_e(f.COUNTS_NOTE)}</p>", _claims_table(report),
        f"<p><strong>Reference kinds</strong>, strongest first: {legend}. "
        "Each row names the kind it was judged against.</p>",
        _list("Machines: every CPU that ran a seed of a row on this page", machines),
    ]
    if report.unfinished:
        body.append(_list("Unfinished runs (not in the tables; make replicate-<paper> resumes them)", report.unfinished))
    if report.unreadable:
        body.append(_list("Unreadable result files (not in the tables)", report.unreadable))
    body += [_paper_section(s) for s in report.papers]
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>Replication results</title><style>{CSS}</style></head>\n<body>\n"
            + "\n".join(body) + "\n</body></html>\n")
