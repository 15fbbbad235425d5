"""Small pieces that several papers' pages (replications/<paper>/report.py) build alike, in one place so every page
says them the same way: number cells (a dash for a missing value), mean ± std with its interval, the wall-time,
hardware and commit lines, a reference's words, and the matplotlib set-up of a figure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from shared.stats import summarize

DASH = "—"
CHAR_SECTION = "## Character-level Tiny Shakespeare (nanoGPT's CPU configuration, every FFN an MoE layer)"
CHAR_BIGRAM = "bigram (Kneser-Ney counts of the train part; replications/moe/ngram.py)"


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


def pyplot() -> Any:
    """matplotlib.pyplot on the file-only Agg backend (imported here, so a page without figures never loads it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def tight(fig: Any) -> Any:
    """The figure laid out (tight_layout), ready to return from a Figure's draw."""
    fig.tight_layout()
    return fig
