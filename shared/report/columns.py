"""A table built column by column: each column a header and the function that gives its cell of one row's item (a
result record, or a row of numbers), so a paper names its columns once and every row follows them. The columns that
several papers' tables of records share (a stored aggregate, a mean over seeds, seeds, wall time, the character-level
loss against its bigram floor) are here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from shared.report.blocks import CHAR_BIGRAM, agg_text, mean_std, minutes
from shared.report.paper_hook import Table

Column = tuple[str, Callable[[Any], Any]]  # a table's column: its header and its cell of one row's item


def column_table(items: Iterable[Any], columns: Sequence[Column], extra: Sequence[list[Any]] = (), pad: str = "-",
                 note: str = "") -> Table:
    """One row per item, one cell per column; then the ``extra`` rows (a floor, a reference) padded with ``pad``."""
    rows = [[cell(item) for _, cell in columns] for item in items]
    return Table([h for h, _ in columns], rows + [row + [pad] * (len(columns) - len(row)) for row in extra], note=note)


def agg_column(header: str, metric: str, digits: int = 2, ci: bool = False) -> Column:
    """A record's stored aggregate of ``metric`` as 'mean ± std' (agg_text), with its interval when ``ci``."""
    return header, lambda r: agg_text(r["aggregate"][metric], digits, ci)


def mean_column(header: str, metric: str, digits: int = 2) -> Column:
    """The mean of a record's stored aggregate of ``metric``."""
    return header, lambda r: f"{r['aggregate'][metric]['mean']:.{digits}f}"


def seeds_column(header: str, metric: str, digits: int = 2) -> Column:
    """'mean ± std' (mean_std) of ``metric`` over a record's runs."""
    return header, lambda r: mean_std([float(run["metrics"][metric]) for run in r["runs"]], digits)


MODEL: Column = ("model", lambda r: r["model"])
SEEDS: Column = ("seeds", lambda r: len(r["runs"]))
WALL: Column = ("wall time", lambda r: minutes(r["wall_seconds"]))


def char_columns(floor: float) -> list[Column]:
    """A character-level record's validation loss with its interval, and how far below the bigram ``floor`` it is."""
    return [agg_column("valid loss, nats/char (mean ± std) [95% CI]", "valid_loss", 3, ci=True),
            ("below the bigram floor by", lambda r: f"{floor - r['aggregate']['valid_loss']['mean']:.3f}")]


def char_floor_row(floor: float) -> list[Any]:
    """The bigram floor's row under char_columns: its loss, 0 below itself."""
    return [CHAR_BIGRAM, f"{floor:.3f}", "0"]
