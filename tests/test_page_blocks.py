"""shared/report/blocks.py, columns.py and figures.curve_series: each helper on hand-computed cases (issue 39)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from shared.records import OFFICIAL_NAME
from shared.report.blocks import (
    CHAR_BIGRAM,
    agg_text,
    box_patch,
    commit_text,
    hardware_line,
    interval,
    mean_std,
    minutes,
    num,
    official_runs,
    official_source,
    ordered,
    reference_text,
    tight,
)
from shared.report.columns import (
    MODEL,
    SEEDS,
    WALL,
    agg_column,
    char_columns,
    char_floor_row,
    column_table,
    mean_column,
    seeds_column,
)
from shared.report.figures import curve_series
from shared.report.paper_hook import PaperResults


def test_num_dash_for_missing() -> None:
    assert num(1.234) == "1.23" and num(1.25, 1) == "1.2" and num(12.0, 0) == "12"
    assert num(None) == "—" and num(math.nan) == "—" and num(None, 1, "-") == "-"


def test_interval_plain_and_signed() -> None:
    assert interval(0.1, 2.345) == "[0.10, 2.35]"
    assert interval(-0.5, 0.25, 1, signed=True) == "[-0.5, +0.2]"


def test_mean_std_sample_std_and_one_value() -> None:
    assert mean_std([1.0, 2.0, 3.0]) == "2.00 ± 1.00"  # sample std of 1, 2, 3 is 1
    assert mean_std([4.0], 1) == "4.0 ± 0.0"


def test_agg_text_with_and_without_interval() -> None:
    agg = {"mean": 10.0, "std": 0.5, "ci95_low": 9.25, "ci95_high": 10.75}
    assert agg_text(agg, 1) == "10.0 ± 0.5"
    assert agg_text(agg, 1, ci=True) == "10.0 ± 0.5 [9.2, 10.8]"


def test_minutes_commit_hardware() -> None:
    assert minutes(90) == "1.5 min"
    assert commit_text({"git_commit": "0123456789abcdef", "git_dirty": False}) == "commit 0123456789"
    assert commit_text({"git_commit": "0123456789abcdef", "git_dirty": True}) == "commit 0123456789 (dirty tree)"
    assert hardware_line({"cpu": "X", "torch_threads": 1}) == "Hardware: X, 1 torch thread(s) per run, shared machine."
    assert hardware_line({"cpu": "X", "gpu": "H200", "torch_threads": 2}, "2-core box") == \
        "Hardware: H200, X, 2 torch thread(s) per run, 2-core box."


def test_reference_words_and_lookup() -> None:
    assert reference_text({"value": 64.425, "kind": "paper"}) == "64.42 (paper)"
    assert reference_text({"value": 1.0, "std": 0.25, "kind": "paper", "copied_by": "B"}) == "1.00 ± 0.25 (paper, copied by B)"
    assert reference_text({"value": 1.0}) == "1.00 (paper)"


def test_tight_returns_the_figure() -> None:
    class Fig:
        laid = False

        def tight_layout(self) -> None:
            self.laid = True

    fig = Fig()
    assert tight(fig) is fig and fig.laid


def record(model: str, values: list[float]) -> dict:
    agg = {"mean": 2.0, "std": 1.0, "ci95_low": 0.5, "ci95_high": 3.5}
    return {"dataset": "d", "model": model, "wall_seconds": 90, "aggregate": {"loss": agg, "valid_loss": agg},
            "runs": [{"seed": i + 1, "metrics": {"loss": v}} for i, v in enumerate(values)]}


def test_column_table_rows_then_padded_extra_rows() -> None:
    records = [record("a", [1.0, 2.0, 3.0]), record("b", [4.0])]
    table = column_table(records, [MODEL, agg_column("loss", "loss", 1, ci=True), mean_column("mean", "loss", 0),
                                   seeds_column("over seeds", "loss"), SEEDS, WALL], [["floor", "0.5"]], note="n")
    assert table.header == ["model", "loss", "mean", "over seeds", "seeds", "wall time"]
    assert table.rows == [["a", "2.0 ± 1.0 [0.5, 3.5]", "2", "2.00 ± 1.00", 3, "1.5 min"],
                          ["b", "2.0 ± 1.0 [0.5, 3.5]", "2", "4.00 ± 0.00", 1, "1.5 min"],
                          ["floor", "0.5", "-", "-", "-", "-"]]
    assert table.note == "n"


def test_char_columns_and_floor_row() -> None:
    (loss_header, loss), (below_header, below) = char_columns(2.5)
    assert loss_header == "valid loss, nats/char (mean ± std) [95% CI]" and below_header == "below the bigram floor by"
    assert loss(record("a", [1.0])) == "2.000 ± 1.000 [0.500, 3.500]" and below(record("a", [1.0])) == "0.500"
    assert char_floor_row(2.5) == [CHAR_BIGRAM, "2.500", "0"]


def test_ordered_and_official_runs(tmp_path: Path) -> None:
    records = {("d", "b"): record("b", [1.0]), ("d", "a"): record("a", [1.0]), ("e", "a"): record("a", [1.0])}
    results = PaperResults("p", tmp_path, records)
    assert list(ordered(results, "d", ["a", "c", "b"])) == ["a", "b"]
    official = {"repository": "https://x/y", "commit": "0123456789abcdef"}
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / OFFICIAL_NAME).write_text(json.dumps(official))
    (tmp_path / "f").mkdir()  # an official record without the suite's: left out
    (tmp_path / "f" / OFFICIAL_NAME).write_text(json.dumps(official))
    assert list(official_runs(results, "a")) == [("e", official, records["e", "a"])]
    assert official_source(official) == "https://x/y @ 0123456789ab"


def test_box_patch_and_curve_series() -> None:
    patch = box_patch((1, 2, 4, 8), lw=0.5, color="red")
    assert (patch.get_x(), patch.get_y(), patch.get_width(), patch.get_height()) == (1, 2, 3, 6)
    assert not patch.get_fill() and patch.get_linewidth() == 0.5
    s = curve_series("a", [{"step": 1, "loss": 3.0}, {"step": 2, "loss": 2.5}], "step", "loss", "o-", "k", ms=3)
    assert (s.label, list(s.x), list(s.y), s.style, s.color, s.ms) == ("a", [1, 2], [3.0, 2.5], "o-", "k", 3)
