"""A paper's figures as data: a ``Plot`` of ``Panel``s that one ``draw`` turns into a matplotlib figure.

The architecture rule is that a paper returns its page as data (shared.report.paper_hook); a figure is part of it. A
paper builds a spec (lines with an optional band or error bar, grouped bars, a heatmap, reference lines, axis
settings) and hands ``draw`` to its Figure, e.g. ``Figure("a.png", draw=lambda: draw(spec(records)))``: the spec is
built lazily, so a page written without plots never reads the traces behind one. Every figure is drawn under
shared.report.plot.fixed_style, so one spec gives the same PNG bytes on any machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from shared.report.plot import fixed_style

Numbers = Sequence[float]


@dataclass(frozen=True)
class Series:
    """One line (or marker set) of a panel. ``style`` is matplotlib's format string ('o-', 's--', 'x');
    ``band`` (low, high) shades a range around it; ``yerr`` (below, above) draws error bars instead."""

    label: str | None
    x: Numbers
    y: Numbers
    style: str = "-"
    color: str | None = None
    band: tuple[Numbers, Numbers] | None = None
    yerr: tuple[Numbers, Numbers] | None = None
    alpha: float | None = None
    lw: float | None = None
    ms: float | None = None
    hollow: bool = False  # markers drawn as outlines
    point_labels: list[str] | None = None  # a word written beside each point


def curve_series(label: str | None, points: Sequence[dict[str, Any]], x: str, y: str, style: str = "-",
                 color: str | None = None, **kw: Any) -> Series:
    """The Series through ``points`` (a record's curve: one dict per point), at their ``x`` and ``y`` keys."""
    return Series(label, [p[x] for p in points], [p[y] for p in points], style, color, **kw)


@dataclass(frozen=True)
class Bars:
    """One group member of a grouped bar chart: its value at each of the panel's ``categories``."""

    label: str
    values: Numbers


@dataclass(frozen=True)
class Heatmap:
    """A matrix shown as an image; ``annotate`` is the format of the value written in each cell (None: none)."""

    values: Sequence[Numbers]
    cmap: str = "viridis"
    vmin: float | None = None
    vmax: float | None = None
    annotate: str | None = None
    colorbar: bool = False
    aspect: str = "equal"


@dataclass(frozen=True)
class Rule:
    """A horizontal (or, in ``vlines``, vertical) reference line across the panel."""

    at: float
    label: str | None = None
    color: str = "grey"
    style: str = "-"
    lw: float = 0.8


@dataclass(frozen=True)
class Panel:
    title: str = ""
    xlabel: str = ""
    ylabel: str = ""
    series: list[Series] = field(default_factory=list)
    bars: list[Bars] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)  # x tick labels of bars (or of series drawn at 0, 1, ...)
    heatmap: Heatmap | None = None
    hlines: list[Rule] = field(default_factory=list)
    vlines: list[Rule] = field(default_factory=list)
    twin: list[Series] = field(default_factory=list)  # series on a second y axis at the right
    twin_ylabel: str = ""
    log_x: bool = False
    log_y: bool = False
    ylim: tuple[float | None, float | None] | None = None
    xticks: Numbers | None = None
    yticklabels: list[str] | None = None
    legend: float | None = 8  # the legend's font size; None: no legend
    legend_loc: str = "best"
    grid: bool = False
    title_size: float | None = None


@dataclass(frozen=True)
class Plot:
    """Panels in a grid (``ncols`` across, all in one row by default), each ``panel_size`` inches."""

    panels: list[Panel]
    panel_size: tuple[float, float] = (5.0, 3.8)
    ncols: int | None = None
    suptitle: str = ""
    suptitle_size: float | None = None


def draw(spec: Plot) -> Any:
    """The matplotlib figure of ``spec``, laid out (the Figure's ``draw`` returns it; shared.atomic saves it)."""
    with fixed_style() as plt:
        ncols = spec.ncols or max(1, len(spec.panels))  # no panels: one empty axes
        nrows = -(-len(spec.panels) // ncols)
        w, h = spec.panel_size
        fig, axes = plt.subplots(nrows, ncols, figsize=(w * ncols, h * nrows), squeeze=False)
        for ax, panel in zip(axes.flat, spec.panels):
            _panel(fig, ax, panel)
        for ax in list(axes.flat)[len(spec.panels):]:
            ax.set_visible(False)
        if spec.suptitle:
            fig.suptitle(spec.suptitle, fontsize=spec.suptitle_size)
        fig.tight_layout()
        return fig


def _series(ax: Any, s: Series) -> None:
    kw: dict[str, Any] = {k: v for k, v in (("color", s.color), ("alpha", s.alpha), ("lw", s.lw), ("ms", s.ms)) if v is not None}
    if s.hollow:
        kw["mfc"] = "none"
    if s.yerr is not None:
        line = ax.errorbar(s.x, s.y, yerr=[list(s.yerr[0]), list(s.yerr[1])], fmt=s.style, capsize=5, label=s.label, **kw)[0]
    else:
        line = ax.plot(s.x, s.y, s.style, label=s.label, **kw)[0]
    if s.band is not None:
        ax.fill_between(s.x, s.band[0], s.band[1], color=line.get_color(), alpha=0.2)
    for word, x, y in zip(s.point_labels or [], s.x, s.y):
        ax.annotate(word, (x, y), fontsize=8, xytext=(4, 4), textcoords="offset points")


def _panel(fig: Any, ax: Any, p: Panel) -> None:
    if p.heatmap is not None:
        hm = p.heatmap
        m = np.asarray(hm.values, dtype=float)
        im = ax.imshow(m, cmap=hm.cmap, vmin=hm.vmin, vmax=hm.vmax, aspect=hm.aspect, interpolation="nearest")
        if hm.annotate is not None:
            dark = im.norm.vmin + 0.6 * (im.norm.vmax - im.norm.vmin)  # white text below 60% of viridis: dark cells
            for (i, j), v in np.ndenumerate(m):
                ax.text(j, i, format(v, hm.annotate), ha="center", va="center", color="w" if v < dark else "k")
        if hm.colorbar:
            fig.colorbar(im, ax=ax)
    if p.bars:
        x = np.arange(len(p.categories))
        width = 0.8 / len(p.bars)
        for i, b in enumerate(p.bars):
            ax.bar(x + (i - (len(p.bars) - 1) / 2) * width, b.values, width, label=b.label)
    for s in p.series:
        _series(ax, s)
    if p.categories:
        ax.set_xticks(range(len(p.categories)), p.categories)
    for r in p.hlines:
        ax.axhline(r.at, color=r.color, ls=r.style, lw=r.lw, label=r.label)
    for r in p.vlines:
        ax.axvline(r.at, color=r.color, ls=r.style, lw=r.lw, label=r.label)
    if p.log_x:
        ax.set_xscale("log")
    if p.log_y:
        ax.set_yscale("log")
    if p.xticks is not None:  # a locator, not set_xticks: ticks beyond the data do not widen the axis
        from matplotlib.ticker import FixedLocator, NullFormatter, ScalarFormatter

        ax.xaxis.set_major_locator(FixedLocator(list(p.xticks)))
        if p.log_x:  # plain numbers at the ticks; 2x10^2-style minor labels overlap
            ax.xaxis.set_major_formatter(ScalarFormatter())
            ax.xaxis.set_minor_formatter(NullFormatter())
    if p.yticklabels is not None:
        ax.set_yticks(range(len(p.yticklabels)), p.yticklabels)
    if p.ylim is not None:
        ax.set_ylim(*p.ylim)
    ax.set_xlabel(p.xlabel)
    ax.set_ylabel(p.ylabel)
    ax.set_title(p.title, fontsize=p.title_size)
    if p.grid:
        ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    top = ax
    if p.twin:
        top = ax.twinx()
        for s in p.twin:
            _series(top, s)
        top.set_ylabel(p.twin_ylabel)
        more = top.get_legend_handles_labels()
        handles, labels = handles + more[0], labels + more[1]
    if p.legend is not None and labels:  # one legend of both axes, on the one drawn last so no line covers it
        top.legend(handles, labels, fontsize=p.legend, loc=p.legend_loc)
