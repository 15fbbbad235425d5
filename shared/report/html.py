"""results/index.html: the results page as one HTML file, plots inline, readable on a phone and a laptop.

Dependency-free (string building with html.escape), no JavaScript. CSS is inline; images are referenced
relatively (they sit beside the page under results/), not base64-inlined: the PNGs are committed anyway, so
inlining would store each one twice in git on every regeneration (~4 MB today) and make every report diff
a multi-megabyte blob. The page is the summary: per paper, its claims in their short sentences (never cut: a cell
wraps), the status coloured by tone (a verdict reached far below the claim's scale in its own neutral marker with
the scale beside it), the effect with its interval and the scale ratio (shared.report.text.verdicts), then the
forest plot (beside the table on a wide screen); on a phone each verdict is a block of its own, so the page never
scrolls sideways. details.html holds every referenced number, the claims in full, the machines and each paper's
baselines and figures; wider tables there scroll inside their own box.
"""

from __future__ import annotations

import re
from html import escape
from pathlib import PurePosixPath

from shared.reference import KINDS
from shared.report import text as f
from shared.report.content import PaperSection, Report, Row
from shared.report.markdown import page_link
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
.neutral { color: var(--none); } .scaled { color: var(--none); border: 1px dashed var(--none); }
.note { color: var(--none); font-size: 0.9em; }
.meta { font-size: 0.8rem; color: var(--none); margin: 0 0 0.4rem; }
table.verdicts { width: 100%; table-layout: fixed; font-size: 0.8rem; line-height: 1.25; margin: 0; }
table.verdicts col.paper { width: 6.6rem; } table.verdicts col.status { width: 9.5rem; }
table.verdicts col.effect { width: 32%; } table.verdicts col.ratio { width: 5.2rem; }
@media (min-width: 1200px) { table.verdicts col.status { width: 15rem; } }  /* status and scale note on one line */
table.verdicts td { padding: 0.1rem 0.3rem; overflow-wrap: anywhere; }  /* a long cell wraps, never cut */
table.verdicts td.verdict .status { white-space: normal; display: inline-block; }
table.verdicts tr.first td { border-top: 2px solid #8886; }
table.verdicts td.effect { font-variant-numeric: tabular-nums; }
table.verdicts td.ratio { white-space: nowrap; color: var(--none); }
.first-screen { display: grid; gap: 0.75rem; grid-template-columns: minmax(0, 1fr); }
@media (min-width: 1500px) { .first-screen { grid-template-columns: minmax(0, 1fr) 32rem; align-items: start; } }
figure.forest { margin: 0; }
/* A phone: each verdict is a block (status and scale, then the claim, then the effect): nothing is cut or off-screen. */
@media (max-width: 600px) {
  table.verdicts, table.verdicts tbody, table.verdicts tr, table.verdicts td { display: block; width: auto; }
  table.verdicts thead, table.verdicts colgroup { display: none; }
  table.verdicts td { border: 0; padding: 0.05rem 0.2rem; }
  table.verdicts tr { border-top: 1px solid #8885; padding: 0.2rem 0; }
  table.verdicts td.paper { padding-top: 0.5rem; font-size: 0.95rem; }
  table.verdicts td.verdict, table.verdicts td.ratio { display: inline-block; }
  table.verdicts td.ratio::before { content: "scale "; }
}
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
    """A Markdown sentence (shared.report.text's, shared with README.md) as HTML: escaped, `code` as <code>."""
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


DETAILS_HTML = "details.html"
SCALED_MARK = "◐"  # a verdict reached far below the claim's scale: its own neutral marker, never plain red


def _status(status: str, scale_note: str = "") -> str:
    if scale_note:
        return (f'<span class="status {f.SCALED}" title="reached far below the claim\'s scale">{SCALED_MARK} '
                f'{_e(status)}</span> <span class="note">{_e(scale_note)}</span>')
    return f'<span class="status {TONE[status]}">{_e(status)}</span>'


def _ref(row: Row) -> list[str]:
    return [_status(row.status), _e(f.reproduced(row)), _e(f.num(row.reported, row.mean)), _kind(row.kind)]


def _verdict_table(report: Report) -> str:
    """One row group per paper (the paper's name spans its lines): status, the claim in its short sentence, the
    effect with its interval, the scale ratio. Every cell wraps; none is cut."""
    body = []
    for s in report.papers:
        found = f.verdicts(s)
        for i, v in enumerate(found):
            paper = (f'<td class="paper" rowspan="{len(found)}"><a href="{_e(page_link(s))}"><b>{_e(s.paper)}</b></a>'
                     '</td>' if i == 0 else "")
            ratio = ' title="parameters reached here / the claim\'s"' if v.ratio != f.DASH else ""
            body.append(f'<tr class="{"first" if i == 0 else ""}" data-paper="{_e(s.paper)}">{paper}'
                        f'<td class="verdict">{_status(v.status, v.scale_note)}</td>'
                        f'<td class="claim" title="{_e(v.full)}">{_md(v.text)}</td>'
                        f'<td class="effect">{_md(v.evidence)}</td><td class="ratio"{ratio}>{_e(v.ratio)}</td></tr>')
    return ('<table class="verdicts"><colgroup><col class="paper"><col class="status"><col class="claim">'
            '<col class="effect"><col class="ratio"></colgroup><thead><tr><th>paper</th><th>status</th>'
            "<th>claim or number</th><th>effect [95% interval] or evidence</th><th>scale here / claim's</th></tr>"
            f'</thead><tbody>{"".join(body)}</tbody></table>')


def _forest(forest: str) -> str:
    return (f'<figure class="forest"><a href="{_e(forest)}"><img src="{_e(forest)}" alt="forest plot: every judged '
            f'claim\'s effect with its 95% interval and the line it is judged against, grouped by paper" '
            f'decoding="async"></a><figcaption>{_e(f.FOREST_CAPTION)}</figcaption></figure>')


def _numbers_table(report: Report) -> str:
    """Five columns, so that it fits 800 px: the paper (its rows counted by status under its name), the status,
    which number, the reproduction, the reference with its kind."""
    rows = []
    for s in report.papers:
        for i, r in enumerate(f.number_rows(s)):
            counts = f'<br><span class="meta" title="{_e(f.COUNTS_HEADER)}">{_e(f.counts(s))}</span>' if i == 0 else ""
            reference = _e(f.num(r.reported, r.mean)) + (f" {_kind(r.kind)}" if r.kind else "")
            caveat = f'<br><span class="meta">caveat: {_e(r.caveat)}</span>' if r.caveat else ""
            rows.append([f'<a href="#{_e(s.paper)}">{_e(s.paper)}</a>{counts}', _status(r.status) + caveat,
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
    rows = [[f'<a href="#{_e(s.paper)}">{_e(s.paper)}</a>', _status(c.status, c.scale_note), _md(f.claim_words(c)),
             _md(c.text), _md(f.evidence(c)), _e(f.scale_words(c)), _e(c.source),
             {True: "yes", False: "no"}.get(c.verified, f.DASH)] for s in report.papers for c in s.claims]
    if not rows:
        return ""
    return (f"<p>{_bold(f.CLAIMS_NOTE)}</p>" + _table(
        ["paper", "status", "claim", "in the paper's words", "evidence", "scale", "source", "verified"], rows,
        wrap={2, 3, 4, 5, 6}))


def _bold(text: str) -> str:
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", _md(text))


def _list(title: str, items: list[str]) -> str:
    return f"<p><strong>{_e(title)}</strong></p><ul>" + "".join(f"<li>{_e(i)}</li>" for i in items) + "</ul>"


def _left_out(report: Report) -> list[str]:
    out = []
    if report.without_results:
        out.append(f"<p><strong>No results yet</strong> (a package, no complete result file): "
                   f"{_e(', '.join(report.without_results))}.</p>")
    if report.unfinished:
        out.append(_list("Unfinished runs (not in the tables; make replicate-<paper> resumes them)", report.unfinished))
    if report.unreadable:
        out.append(_list("Unreadable result files (not in the tables)", report.unreadable))
    if report.failed:
        out.append(_list(f.FAILED_TITLE, report.failed))
    return out


def _page(title: str, body: list[str]) -> str:
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(title)}</title><style>{CSS}</style></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n")


def _tones() -> str:
    return "; ".join(f'<span class="status {t}">{SCALED_MARK + " " if t == f.SCALED else ""}{_e(t)}</span>: '
                     f"{_e(f.TONE_WORDS[t])}" for t in f.MARK)


def render_html(report: Report, forest: str | None = None) -> str:
    """The summary page (a few screens); ``forest``: the forest plot's file beside it (None: no judged claim)."""
    papers = "".join(
        f'<li><b>{_e(s.paper)}</b>' + (f": <em>{_e(s.info['title'])}</em> ({_e(s.info.get('venue', ''))})"
                                        if s.info.get("title") else "") + ": "
        + ", ".join(f'<a href="{_e(p)}">{_e(PurePosixPath(p).name)}</a>' for p in s.links) + "</li>"
        for s in report.papers)
    body = [
        "<h1>Results: a verdict per published claim</h1>",
        f'<p class="meta">{_md(f.stamp(report))}. {_tones()}. Every number with a reference, the claims in full, the '
        f'machines and each paper\'s baselines: <a href="{DETAILS_HTML}">{DETAILS_HTML}</a>. Markdown version: '
        '<a href="README.md">README.md</a>.</p>',
        f'<div class="first-screen"><div>{_verdict_table(report)}<p class="meta">{_e(f.VERDICTS_NOTE)}</p></div>'
        + (_forest(forest) if forest else "") + "</div>",
        f"<p><strong>Papers</strong> (each page opens with its verdicts):</p><ul>{papers}</ul>",
        *_left_out(report),
    ]
    return _page("Replication results", body)


def render_details_html(report: Report) -> str:
    """Everything the summary leaves out: every referenced number, the claims in full, machines, each paper."""
    legend = "; ".join(f"<code>{_e(k)}</code>: {_e(v)}" for k, v in f.kind_legend())
    machines = [f.machine(cpu, files) for cpu, files in report.machines.items()]
    body = [
        "<h1>Results in detail</h1>",
        f'<p class="meta">{_md(f.stamp(report))}. {_tones()}. Back to <a href="index.html">the summary</a>.</p>',
        f"<p>{_bold(f.NUMBERS_NOTE)}</p>", _numbers_table(report), _claims_table(report),
        f"<p>{_md(f.INTRO)}</p>",
        f"<p><strong>Reference kinds</strong>, strongest first: {legend}. "
        "Each row names the kind it was judged against.</p>",
        _list("Machines: every CPU that ran a seed of a row on this page", machines), *_left_out(report),
    ]
    body += [_paper_section(s) for s in report.papers]
    return _page("Replication results in detail", body)
