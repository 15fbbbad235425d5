"""shared.report.figures: a spec draws the panels, lines and bars it names, and the same spec gives the same PNG bytes."""

from __future__ import annotations

import io
from typing import Any

from shared.report.figures import Bars, Heatmap, Panel, Plot, Rule, Series, draw


def _png(fig: Any) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=60, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


LINES = Plot([Panel("ppl", "step", "PPL", series=[Series("a", [1, 2, 3], [9, 5, 4], "o-", band=([8, 4, 3], [10, 6, 5])),
                                                   Series("b", [1, 2, 3], [8, 6, 5], "s--")],
                    hlines=[Rule(4.5, "target")], log_y=True),
              Panel("experts", series=[Series(None, [1, 2], [2, 1], yerr=([0.1, 0.1], [0.2, 0.2]))], legend=None)])


def test_lines_panels_and_legend() -> None:
    fig = draw(LINES)
    left, right = fig.axes
    assert len(left.get_lines()) == 3  # two series and the target rule
    assert left.get_yscale() == "log" and left.get_title() == "ppl"
    assert [t.get_text() for t in left.get_legend().get_texts()] == ["a", "b", "target"]
    assert right.get_legend() is None
    assert len(left.collections) == 1  # the band


def test_bars_heatmap_and_grid() -> None:
    spec = Plot([Panel("speed-up", bars=[Bars("x", [1, 2]), Bars("y", [2, 3]), Bars("z", [1, 1])], categories=["p", "q"]),
                 Panel("share", heatmap=Heatmap([[0.1, 0.4], [0.3, 0.2]], annotate=".2f", colorbar=True)),
                 Panel("twin", series=[Series("map", [1, 2], [3, 4])], twin=[Series("s", [1, 2], [10, 20])])], ncols=2)
    fig = draw(spec)
    bars, heat, twin = fig.axes[:3]
    assert len(bars.patches) == 6
    assert [t.get_text() for t in bars.get_xticklabels()] == ["p", "q"]
    assert len(heat.images) == 1 and len(heat.texts) == 4
    assert [t.get_text() for t in fig.axes[-1].get_legend().get_texts()] == ["map", "s"]  # on the twin axis, drawn last
    assert not fig.axes[3].get_visible()  # the grid's fourth cell is empty


def test_same_spec_same_bytes() -> None:
    assert _png(draw(LINES)) == _png(draw(LINES))
