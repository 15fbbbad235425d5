"""shared/report/blocks.py: each helper on hand-computed cases (issue 39)."""

from __future__ import annotations

import math

from shared.report.blocks import (
    agg_text,
    commit_text,
    hardware_line,
    interval,
    mean_std,
    minutes,
    num,
    reference_text,
    tight,
)


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
