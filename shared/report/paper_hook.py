"""What a paper's ``report()`` hook receives and returns: its result records in, its page as data out.

A paper never writes files after its runs: ``Replication.report(results)`` reads ``PaperResults`` (every
complete record of the paper under one results root, and the side files its benchmarks wrote there) and
returns a ``PaperReport``: the blocks of its page (text, tables, figures, in order), its claims with their
status from the one vocabulary (shared.verdict) and the data behind them. shared.report writes all of it:
``results/<paper>/README.md``, ``results/<paper>/claims.json`` and each figure, atomically.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from shared.records import complete_records
from shared.verdict import checked

PAGE_NAME = "README.md"  # the paper's own page: results/<paper>/README.md
CLAIMS_NAME = "claims.json"  # its claims and data, one schema for every paper


@dataclass(frozen=True)
class Claim:
    """A published claim and its verdict here. ``evidence``: a few words a reader needs to believe the
    status (the measured effect with its interval, or why it cannot be tested here)."""

    text: str
    source: str
    verified: bool | None
    status: str
    evidence: str = ""
    kind: str = ""  # the kind of the claim's source (shared.reference.KINDS: paper, authors' release, ...)
    effect: float | None = None
    interval: tuple[float, float] | None = None
    unit: str = ""
    scale: str = ""  # where the verdict holds only at the scale measured: that scale, in words
    # From a claim spec (shared.claims): its id, the hand-written short sentence, the dataset of a per-dataset
    # verdict, the units behind the interval, the reference's caveat, and the scale reached beside the claim's.
    id: str = ""
    short: str = ""
    dataset: str | None = None
    n: int = 0
    caveat: str = ""
    reached_scale: dict[str, Any] = field(default_factory=dict)
    claim_scale: dict[str, Any] = field(default_factory=dict)
    scale_ratio: float | None = None
    scale_note: str = ""  # 'at 0.81M params (claim: 1.5B)': reached far below the claim's scale
    arms: list[str] = field(default_factory=list)  # the judge's arms (arm, baseline)
    trend: dict[str, Any] | None = None  # the effect across model sizes (a spec's sizes:, shared.claims.trend)

    def __post_init__(self) -> None:
        checked(self.status)

    @property
    def display_status(self) -> str:
        """The status word, with the scale it was reached at where that is far below the claim's."""
        return f"{self.status} {self.scale_note}" if self.scale_note else self.status

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["interval"] = list(self.interval) if self.interval is not None else None
        return out


@dataclass(frozen=True)
class Table:
    header: list[str]
    rows: list[list[Any]]
    title: str = ""
    note: str = ""  # one paragraph under the table


@dataclass(frozen=True)
class Figure:
    """A PNG under results/<paper>/; ``draw`` builds the matplotlib figure (only called when plots are on)."""

    name: str
    draw: Callable[[], Any]
    caption: str = ""
    dpi: float | None = None


Block = str | Table | Figure  # a str is a Markdown paragraph or heading, written as given


@dataclass
class PaperReport:
    blocks: list[Block] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)  # the numbers behind the tables, for claims.json

    def figures(self) -> list[Figure]:
        return [b for b in self.blocks if isinstance(b, Figure)]


@dataclass(frozen=True)
class PaperResults:
    """The complete result records of one paper under one results root (see load_paper_results), and the
    folder its side files are in."""

    paper: str
    folder: Path  # <results root>/<paper>
    records: dict[tuple[str, str], dict[str, Any]]  # (dataset, model) -> record

    def record(self, dataset: str, model: str) -> dict[str, Any] | None:
        return self.records.get((dataset, model))

    def datasets(self) -> list[str]:
        return sorted({d for d, _ in self.records})

    def models(self, dataset: str) -> dict[str, dict[str, Any]]:
        return {m: r for (d, m), r in sorted(self.records.items()) if d == dataset}

    def side_file(self, name: str) -> Any | None:
        """A JSON file a benchmark of the paper wrote beside its results (None when it is not there)."""
        path = self.folder / name
        return json.loads(path.read_text()) if path.exists() else None

    @property
    def root(self) -> Path:
        return self.folder.parent


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def failure(record: dict[str, Any]) -> str | None:
    """"failed: non-finite test_auc in 10 of 10 seeds" for a record whose metrics are not all finite numbers (a
    diverged or degenerate run: NaN, inf or null), None for a sound one. Such a record is shown as failed, never as
    ``nan ± nan``, and judged against no reference. Without per-seed metrics the stored aggregate is checked."""
    runs = [r.get("metrics") for r in record.get("runs") or [] if isinstance(r, dict) and isinstance(r.get("metrics"), dict)]
    bad = Counter(name for metrics in runs for name, value in metrics.items()
                  if value is None or (isinstance(value, float) and not math.isfinite(value)))
    found = [f"{name} in {k} of {len(runs)} seed{'s' * (len(runs) != 1)}" for name, k in bad.items()]
    if not runs:
        found = [name for name, agg in (record.get("aggregate") or {}).items()
                 if isinstance(agg, dict) and not all(_finite(agg.get(k)) for k in ("mean", "std"))]
    return f"failed: non-finite {', '.join(found)}" if found else None


def load_paper_results(root: Path, paper: str) -> PaperResults:
    """Complete records under <root>/<paper>/<dataset>/<model>.json (partial and side files skipped, and failed
    ones: non-finite metrics are not judged): the full-scale ones where there are any (a smoke run never mixes
    into the protocol's page), else every one (the page of a smoke run, beside it)."""
    records, full = {}, {}
    for _, record in complete_records(root / paper, "*/*.json"):
        if "dataset" in record and failure(record) is None:
            records[record["dataset"], record["model"]] = record
            if record.get("scale") == "full":
                full[record["dataset"], record["model"]] = record
    return PaperResults(paper=paper, folder=root / paper, records=full or records)
