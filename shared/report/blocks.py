"""Small pieces that several papers' pages (replications/<paper>/report.py) build alike, in one place so every page
says them the same way: number cells (a dash for a missing value), mean ± std with its interval, the wall-time,
hardware and commit lines, a reference's words, a dataset's records in a paper's order, the official code's runs beside
the suite's, and the matplotlib set-up of a figure. Tables built column by column: shared.report.columns.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from shared.records import OFFICIAL_NAME
from shared.report.paper_hook import PaperResults
from shared.stats import summarize

DASH = "—"
CHAR_SECTION = "## Character-level Tiny Shakespeare (nanoGPT's CPU configuration, every FFN an MoE layer)"
CHAR_BIGRAM = "bigram (Kneser-Ney counts of the train part; replications/moe/ngram.py)"
CHAR_VALIDATION = "Validation = the last 10% of the text (nanoGPT's split; no test part)."
Record = dict[str, Any]


def num(value: float | None, digits: int = 2, dash: str = DASH) -> str:
    """``value`` to ``digits`` decimals; None or NaN (not measured) as ``dash``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return dash
    return f"{value:.{digits}f}"


def interval(low: float, high: float, digits: int = 2, signed: bool = False) -> str:
    """'[low, high]', signed ('[+0.10, -0.20]') for a difference."""
    spec = f"{'+' if signed else ''}.{digits}f"
    return f"[{low:{spec}}, {high:{spec}}]"


def mean_std(values: Sequence[float], digits: int = 2) -> str:
    """'mean ± std' of per-seed values by shared.stats.summarize (sample std, ddof=1; one value: ± 0)."""
    s = summarize(list(values))
    return f"{s['mean']:.{digits}f} ± {s['std']:.{digits}f}"


def agg_text(agg: Mapping[str, float], digits: int = 2, ci: bool = False) -> str:
    """A record's stored aggregate as 'mean ± std', with its '[ci95_low, ci95_high]' when ``ci``."""
    text = f"{agg['mean']:.{digits}f} ± {agg['std']:.{digits}f}"
    return text + (f" {interval(agg['ci95_low'], agg['ci95_high'], digits)}" if ci else "")


def minutes(seconds: float) -> str:
    """A wall time as '12.3 min'."""
    return f"{seconds / 60:.1f} min"


def commit_text(env: Mapping[str, Any]) -> str:
    """'commit 0123456789' of a record's environment, with ' (dirty tree)' when it ran from uncommitted code."""
    return f"commit {str(env.get('git_commit'))[:10]}" + (" (dirty tree)" if env.get("git_dirty") else "")


def hardware_line(hw: Mapping[str, Any], machine: str = "shared machine") -> str:
    """'Hardware: [GPU, ]CPU, N torch thread(s) per run, <machine>.' from a record's environment.hardware."""
    gpu = f"{hw['gpu']}, " if hw.get("gpu") else ""
    return f"Hardware: {gpu}{hw['cpu']}, {hw['torch_threads']} torch thread(s) per run, {machine}."


def reference_text(entry: Mapping[str, Any], digits: int = 2) -> str:
    """A paper.yaml reference as 'value ± std (kind, copied by X)'; the std and the copier only where given."""
    std = f" ± {entry['std']:.{digits}f}" if entry.get("std") is not None else ""
    copied = f", copied by {entry['copied_by']}" if entry.get("copied_by") else ""
    return f"{entry['value']:.{digits}f}{std} ({entry.get('kind', 'paper')}{copied})"


def ordered(results: PaperResults, dataset: str, names: Iterable[str]) -> dict[str, Record]:
    """The dataset's records of ``names``, in that order (a name without a record left out)."""
    return {name: r for name in names if (r := results.record(dataset, name)) is not None}


def official_runs(results: PaperResults, model: str) -> Iterator[tuple[str, Record, Record]]:
    """(dataset, the official code's record, the suite's record of ``model``) for each dataset that has both."""
    for dataset in results.datasets():
        official, suite = results.side_file(f"{dataset}/{OFFICIAL_NAME}"), results.record(dataset, model)
        if official is not None and suite is not None:
            yield dataset, official, suite


def official_source(official: Mapping[str, Any]) -> str:
    """'<repository> @ <commit[:12]>' of an official-code record."""
    return f"{official.get('repository')} @ {str(official.get('commit'))[:12]}"


def pyplot() -> Any:
    """matplotlib.pyplot on the file-only Agg backend (imported here, so a page without figures never loads it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def box_patch(box: Sequence[float], **style: Any) -> Any:
    """An unfilled matplotlib Rectangle over the axis-aligned box (x1, y1, x2, y2), for ``ax.add_patch``."""
    from matplotlib.patches import Rectangle

    x1, y1, x2, y2 = box
    return Rectangle((x1, y1), x2 - x1, y2 - y1, fill=False, **style)


def tight(fig: Any) -> Any:
    """The figure laid out (tight_layout), ready to return from a Figure's draw."""
    fig.tight_layout()
    return fig
