"""One figure per paper: small multiples, one panel per test metric, so each metric keeps its own scale.

A single shared axis let large-valued metrics (mean rank in the thousands, latency in ms) flatten every
other one (issue #19); one panel per metric, at most ``MAX_COLS`` panels across, caps the width at
``MAX_COLS * PANEL_W * DPI`` pixels (960) however many metrics or models a paper has, so that the figure
stays legible when a page scales it to an 800 px screen. The bounds of a metric's interval
(``<metric>_ci_low`` / ``<metric>_ci_high``) are not metrics: they are that metric's error bar, not panels.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from shared.atomic import save_figure_atomic
from shared.report.content import Row

MAX_COLS, PANEL_W, PANEL_H, DPI = 3, 3.2, 2.6, 100
# The font matplotlib bundles, named outright, and a fixed SVG id salt: no figure depends on the fonts or the
# matplotlibrc of the machine that draws it.
FIXED_RC = {"font.family": "DejaVu Sans", "svg.hashsalt": "replications"}
MARKERS = "osv^<>PXh"
CI_SUFFIXES = ("_ci_low", "_ci_high")


def interval_of(metric: str) -> tuple[str, int] | None:
    """(the metric, 0 for the low bound / 1 for the high one) when ``metric`` names a bound of another's interval."""
    for i, suffix in enumerate(CI_SUFFIXES):
        if metric.endswith(suffix):
            return metric.removesuffix(suffix), i
    return None


def error_bar(row: Row, bounds: dict[tuple[str, str, str], list[float | None]]) -> tuple[float, float]:
    """(below, above) the mean: the row's own interval where the record has one, else ± its std over seeds."""
    low, high = bounds.get((row.metric, row.dataset, row.model), (None, None))
    if low is None or high is None:
        return row.std, row.std
    return max(0.0, row.mean - low), max(0.0, high - row.mean)


@contextmanager
def fixed_style() -> Iterator[Any]:
    """pyplot under matplotlib's default style plus FIXED_RC, whatever the local matplotlibrc says: a figure created
    inside renders to the same pixels on any machine (issue 38: `make report` re-rendered figures differently)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with plt.style.context("default"), matplotlib.rc_context(FIXED_RC):
        yield plt


def _model_order(rows: list[Row], headline_models: tuple[str, ...]) -> list[str]:
    present = {r.model for r in rows}
    return [m for m in headline_models if m in present] + sorted(present - set(headline_models))


def plot_paper(paper: str, rows: list[Row], headline_models: tuple[str, ...], out: Path) -> None:
    """Reproduced mean per model (x) and dataset (marker) with its interval (± std over seeds where the record
    has no interval of its own); the reference value as a red diamond."""
    with fixed_style() as plt:
        _draw(paper, rows, headline_models, out, plt)


def _draw(paper: str, rows: list[Row], headline_models: tuple[str, ...], out: Path, plt: Any) -> None:
    bounds: dict[tuple[str, str, str], list[float | None]] = {}
    for r in rows:
        if (found := interval_of(r.metric)) is not None:
            bounds.setdefault((found[0], r.dataset, r.model), [None, None])[found[1]] = r.mean
    rows = [r for r in rows if interval_of(r.metric) is None]  # a bound is its metric's error bar, not a panel
    metrics = list(dict.fromkeys(r.metric for r in rows))
    datasets = sorted({r.dataset for r in rows})
    models = _model_order(rows, headline_models)
    ncols = max(1, min(MAX_COLS, len(metrics)))
    nrows = max(1, -(-len(metrics) // ncols))
    fig_w = max(5.0, PANEL_W * ncols)  # a lone panel still gets room for its title and legend
    height = PANEL_H * nrows + (1.2 if fig_w < 8 else 0.9)  # + title above and legend below the panels (inches)
    fig, axes = plt.subplots(nrows, ncols, figsize=(fig_w, height), squeeze=False)
    width = 0.7 / max(1, len(datasets))
    by_key = {(r.metric, r.dataset, r.model): r for r in rows}
    for ax, metric in zip(axes.flat, metrics):
        for d, dataset in enumerate(datasets):
            offset = (d - (len(datasets) - 1) / 2) * width
            cells = [(x + offset, by_key[metric, dataset, m]) for x, m in enumerate(models)
                     if (metric, dataset, m) in by_key]
            if not cells:
                continue
            xs, rs = zip(*cells)
            below, above = zip(*(error_bar(r, bounds) for r in rs))
            ax.errorbar(xs, [r.mean for r in rs], yerr=[below, above], fmt=MARKERS[d % len(MARKERS)],
                        color=f"C{d}", capsize=2, markersize=5, label=dataset)
            known = [(x, r.reported) for x, r in cells if r.reported is not None]
            if known:
                ax.scatter(*zip(*known), marker="D", s=28, facecolor="none", edgecolor="red", zorder=3,
                           label="reference")
        ax.set_title(metric.removeprefix("test_"), fontsize=10)
        ax.set_xticks(range(len(models)), models, fontsize=8, rotation=30 if len(models) > 3 else 0,
                      ha="right" if len(models) > 3 else "center")
        for label in ax.get_xticklabels():
            if label.get_text() in headline_models:
                label.set_fontweight("bold")  # the paper's own model(s)
        ax.tick_params(axis="y", labelsize=8)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(metrics):]:
        ax.set_visible(False)
    handles: dict = {}
    for ax in axes.flat:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    labels = sorted(handles, key=lambda k: k == "reference")  # datasets first, as in the panels
    if labels:  # a paper with nothing plotted here (no metric the page shows) has no legend to draw
        fig.legend([handles[k] for k in labels], labels, loc="lower center", ncol=min(len(labels), 6), fontsize=8,
                   frameon=False)
    title = (f"{paper}: reproduced (mean; bars: its interval where one was measured, else ± std over seeds) vs "
             "reference; bold: the paper's model")
    fig.suptitle(textwrap.fill(title, width=int(11 * fig_w)), fontsize=10)  # wrapped to fit narrow figures
    fig.tight_layout(rect=(0, 0.45 / height, 1, 1 - 0.35 / height))
    save_figure_atomic(fig, out, dpi=DPI)
