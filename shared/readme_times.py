"""Durations in a README, generated from the result files (``make report``): no wall time is typed by hand.

A README marks each duration ``<!-- wall-time PAPER[/DATASET[/MODEL]] -->text<!-- /wall-time -->``; the text is
replaced by the summed ``wall_seconds`` of the complete full-scale records under ``results/PAPER`` that match, in
words ("3.5 min", "6.3 h"). A selection that matches no record is an error naming it.
"""

from __future__ import annotations

import re
from pathlib import Path

from shared.atomic import write_text_atomic
from shared.report_data import scan

MARK = re.compile(r"<!-- wall-time (?P<sel>[\w./-]+) -->(?P<text>.*?)<!-- /wall-time -->", re.S)


def in_words(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def wall_seconds(records: list[dict], selection: str) -> float:
    """Summed wall time of the records a 'paper[/dataset[/model]]' selection names."""
    parts = selection.split("/")
    keys = ("paper", "dataset", "model")[: len(parts)]
    found = [r for r in records if r.get("scale") == "full" and [r.get(k) for k in keys] == parts]
    if not found:
        raise ValueError(f"README wall-time '{selection}': no complete full-scale result file matches it")
    return sum(float(r.get("wall_seconds") or 0.0) for r in found)


def fill(readme: Path, root: Path) -> bool:
    """Rewrite every marked duration of `readme` from the records under `root`; True when the file changed."""
    if not readme.exists():
        return False
    text = readme.read_text()
    records = scan(root)[0]
    new = MARK.sub(lambda m: f"<!-- wall-time {m['sel']} -->{in_words(wall_seconds(records, m['sel']))}"
                             "<!-- /wall-time -->", text)
    if new != text:
        write_text_atomic(readme, new)
    return new != text
