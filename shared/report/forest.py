"""results/forest.png: one forest plot of every judged claim's effect with its interval and the line it is judged
against, grouped by paper (the first screen's picture of all claims).

Claims are in different units (perplexity, F1 points, speed-up ratios, nats), so no one axis can hold them and a
normalisation (effect / margin, say) would hide the numbers a reader checks against the table. Each claim gets its
own thin axis row in its own unit instead: the dot is read against its own row's lines (no effect: 0 for a
difference, 1 for a ratio or a speed-up, the value of a threshold; dashed: the margin), never across rows.

The lines come from the claim's spec in paper.yaml (shared.claims: its judge kind, margin, threshold, tolerance); a
margin relative to a baseline's mean is read from the rule the library wrote into the evidence ("effect <= 0.35"),
as the number it was judged against. A claim without a spec (a paper not migrated yet) is drawn without lines.
Byte-identical renders: matplotlib's default style with DejaVu Sans (shared.report.plot.fixed_style), no Software
stamp, and an unchanged image is not rewritten (shared.atomic.save_figure_atomic).
"""

from __future__ import annotations

import math
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.atomic import save_figure_atomic
from shared.claims.spec import ClaimSpecError, load_claims
from shared.report.content import Report
from shared.report.paper_hook import Claim
from shared.report.plot import fixed_style
from shared.verdict import TONE

FOREST_NAME = "forest.png"
COLOURS = {"good": "#1a7f37", "bad": "#cf222e", "neutral": "#6e7781", "scaled": "#6e7781"}
FIG_W, DPI = 9.0, 100  # 900 px: legible when a phone scales it down and tapped to open at full size
LABEL_CHARS, UNIT_CHARS = 62, 78  # wrap widths of the claim (never cut: wrapped) and its unit in the left column
LINE_H, HEADER_H, TOP_H, BOTTOM_H = 0.135, 0.3, 0.55, 0.15  # inches
AXES_LEFT, AXES_W = 0.53, 0.44  # figure fractions: the claims' words on the left, the axes on the right
# The rule the library writes ("effect <= 0.35 (no loss ...)", "speed-up - 1 > 0"): the margin it was judged against.
RULE_MARGIN = re.compile(r"(?:effect|ratio - 1|speed-up - 1) (?:>|<|<=) (-?[0-9.]+(?:e[-+]?[0-9]+)?)")


@dataclass(frozen=True)
class ForestRow:
    """One claim's row: where its dot, bar and lines go, in its own unit."""

    paper: str
    label: str
    unit: str
    effect: float
    low: float | None
    high: float | None
    null: float | None  # no effect (0, 1 or a threshold); None where the spec does not say
    margins: tuple[float, ...]  # the margin lines, in the effect's unit
    tone: str  # good / bad / neutral, or scaled (reached far below the claim's scale: a hollow grey dot)


def _rule_margin(evidence: str) -> float | None:
    found = RULE_MARGIN.search(evidence or "")
    return abs(float(found.group(1))) if found else None


def reference_lines(judge: dict[str, Any] | None, claim: Claim) -> tuple[float | None, tuple[float, ...]]:
    """(no-effect line, margin lines) of a claim judged by ``judge`` (its paper.yaml spec; None: no lines)."""
    if not judge:
        return None, ()
    kind = judge.get("kind")
    if kind == "threshold":
        return float(judge["threshold"]), ()
    if kind == "within_tolerance":
        tolerance = float(judge["tolerance"])
        return 0.0, (-tolerance, tolerance)
    if kind not in ("paired_difference", "paired_bootstrap", "ratio", "steps_to_target", "sign"):
        return None, ()  # a paper-specific measure: its function alone knows what "no effect" is
    null = 1.0 if kind in ("ratio", "steps_to_target") else 0.0
    margin = _rule_margin(claim.evidence) if judge.get("margin_relative_to") else float(judge.get("margin") or 0.0)
    if not margin or kind == "sign":
        return null, ()
    return null, (null - margin,) if judge.get("claimed") == "negative" else (null + margin,)


def _specs(papers_dir: Path, paper: str) -> dict[str, dict[str, Any] | None]:
    """{claim id: its judge spec} of one paper.yaml; {} for a paper whose claims are not specs yet."""
    path = papers_dir / paper / "paper.yaml"
    try:
        return {s.id: s.judge for s in load_claims(path, paper)} if path.exists() else {}
    except ClaimSpecError:  # an older claims: block (its hook judges it in code); its rows get no lines
        return {}


def _finite(*values: float | None) -> bool:
    return all(v is None or (isinstance(v, (int, float)) and math.isfinite(v)) for v in values)


def forest_rows(report: Report, papers_dir: Path) -> list[ForestRow]:
    """Every claim with a measured effect, in the pages' order (paper, then the paper's own order)."""
    rows = []
    for section in report.papers:
        judged = [c for c in section.claims if c.effect is not None]
        specs = _specs(papers_dir, section.paper) if any(c.id for c in judged) else {}
        for c in judged:
            low, high = c.interval if c.interval is not None else (None, None)
            if not _finite(c.effect, low, high):
                continue
            null, margins = reference_lines(specs.get(c.id), c)
            tone = "scaled" if c.scale_note else TONE[c.status]
            rows.append(ForestRow(section.paper, f"{c.short or c.text} [{c.display_status}]", c.unit,
                                  float(c.effect), low, high, null, margins, tone))
    return rows


def _wrapped(row: ForestRow) -> tuple[list[str], list[str]]:
    return textwrap.wrap(row.label, LABEL_CHARS) or [""], textwrap.wrap(row.unit, UNIT_CHARS)


def _row_height(row: ForestRow) -> float:
    label, unit = _wrapped(row)
    return max(0.42, LINE_H * (len(label) + len(unit)) + 0.12)


def _plain(text: str) -> str:
    return text.replace("$", r"\$")  # matplotlib reads $...$ as mathematics


def plot_forest(rows: list[ForestRow], out: Path) -> None:
    with fixed_style() as plt:
        papers = list(dict.fromkeys(r.paper for r in rows))
        height = TOP_H + BOTTOM_H + HEADER_H * len(papers) + sum(_row_height(r) for r in rows)
        fig = plt.figure(figsize=(FIG_W, height))
        fig.text(0.01, 1 - 0.2 / height, "Every judged claim: effect and 95% interval, each row on its own axis in "
                 "its own unit", fontsize=10, weight="bold", va="center")
        fig.text(0.01, 1 - 0.42 / height, "solid grey: no effect; dashed: the claim's margin; hollow grey dot: "
                 "reached far below the claim's scale", fontsize=7.5, color="#555", va="center")
        y = height - TOP_H  # inches from the bottom, going down
        for paper in papers:
            y -= HEADER_H
            fig.text(0.01, (y + 0.08) / height, paper, fontsize=9.5, weight="bold")
            for row in (r for r in rows if r.paper == paper):
                h = _row_height(row)
                y -= h
                _draw_row(fig, row, y, h, height)
        save_figure_atomic(fig, out, dpi=DPI)


def _draw_row(fig: Any, row: ForestRow, y: float, h: float, height: float) -> None:
    from matplotlib.ticker import MaxNLocator

    label, unit = _wrapped(row)
    top = (y + h - 0.06) / height
    fig.text(0.025, top, _plain("\n".join(label)), fontsize=7.5, va="top", linespacing=1.15)
    if unit:
        fig.text(0.025, top - LINE_H * len(label) / height, _plain("\n".join(unit)), fontsize=6.5, va="top",
                 color="#666", linespacing=1.15)
    ax = fig.add_axes((AXES_LEFT, (y + 0.2) / height, AXES_W, (h - 0.27) / height))
    colour = COLOURS[row.tone]
    values = [v for v in (row.effect, row.low, row.high, row.null, *row.margins) if v is not None]
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.08 or abs(hi) * 0.1 or 1.0
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(-1, 1)
    if row.null is not None:
        ax.axvline(row.null, color="#555", lw=0.9)
    for m in row.margins:
        ax.axvline(m, color="#888", lw=0.9, ls="--")
    xerr = None if row.low is None else [[max(0.0, row.effect - row.low)], [max(0.0, row.high - row.effect)]]
    ax.errorbar([row.effect], [0], xerr=xerr, fmt="o", color=colour, ecolor=colour, elinewidth=2, capsize=3,
                markersize=5, markerfacecolor="white" if row.tone == "scaled" else colour, zorder=3)
    ax.set_yticks([])
    for side in ("top", "left", "right"):
        ax.spines[side].set_visible(False)
    ax.xaxis.set_major_locator(MaxNLocator(5))
    ax.tick_params(axis="x", labelsize=6, length=2, pad=1)
    ax.patch.set_alpha(0)
