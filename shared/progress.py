"""Progress bars, one look for the whole suite (tqdm): a loop's bar (`bar`) and the protocol's bar (`Protocol`).

Bars go to stderr and only to a terminal: with ``CI`` set (true/1/yes) or a stderr that is not a TTY (a log
file, a pipe, pytest) nothing is drawn. ``REPLICATIONS_PROGRESS=1`` draws anyway (``| tee log``), ``=0``
never; a caller's ``force=`` wins over both. A bar only reads a loop's items, never changes or reorders them,
and draws nothing from any random generator: a run's numbers are the same with bars on or off.

- ``bar(iterable, desc=...)`` wraps a training or measurement loop: one step per item, tqdm's own ETA. It
  stays hidden for its first ``delay`` seconds (a short loop never flashes) and vanishes when done.
- ``Protocol(total)`` is one bar over every (dataset, model, seed) of a protocol (``python -m
  replications.replicate``, shared.runner.run): "<paper>/<dataset>/<model> seed 3/5", and an ETA of the
  seeds left times the measured seconds per seed (this model's seeds once one has run here, else all
  measured ones); seeds resumed from a partial file count as done and add no time.
- ``write(msg)`` prints a line (to stdout, or `file`) above the bars instead of through them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import IO, Any

from tqdm import tqdm

FORCE_ENV = "REPLICATIONS_PROGRESS"
DELAY_S = 2.0  # a loop's bar appears once the loop has run this long
MININTERVAL_S = 0.5  # at most two redraws a second
PROTOCOL_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} seeds [{elapsed}{postfix}]"


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() not in ("", "0", "false", "no", "off")


def enabled(file: IO[str] | None = None, force: bool | None = None) -> bool:
    """Whether a bar drawn on `file` (default stderr) is shown: `force`, else $REPLICATIONS_PROGRESS, else
    not under CI and only on a terminal."""
    if force is not None:
        return force
    if os.environ.get(FORCE_ENV, "").strip():
        return _truthy(os.environ[FORCE_ENV])
    if _truthy(os.environ.get("CI")):
        return False
    stream = file if file is not None else sys.stderr
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


def bar(iterable: Iterable | None = None, *, desc: str, total: int | None = None, unit: str = "it",
        file: IO[str] | None = None, force: bool | None = None, delay: float = DELAY_S, **kwargs: Any) -> tqdm:
    """A loop's bar: iterate it like `iterable`, or call .update(n) (then give `total`); use it as a context
    manager when the loop may stop early. Disabled (see `enabled`), it yields the items and draws nothing."""
    options = {"leave": False, "mininterval": MININTERVAL_S, "dynamic_ncols": True} | kwargs
    return tqdm(iterable, desc=desc, total=total, unit=unit, file=file, delay=delay,
                disable=not enabled(file, force), **options)


def write(message: str, file: IO[str] | None = None) -> None:
    """print(message, file=file), drawn above any bar on the terminal rather than through it."""
    tqdm.write(message, file=file)


def format_seconds(seconds: float) -> str:
    return tqdm.format_interval(seconds)


class Protocol:
    """One bar over a protocol's runs, one step per (dataset, model, seed); see the module docstring.

    `total`: the seeds of every run it will count (None: those of the runs started so far, one run's own bar).
    Per run: ``start(label, seeds)`` once, then per seed ``running()`` before it runs and ``finished(seconds)``
    after, or ``resumed()`` for one read back from a partial file."""

    def __init__(self, total: int | None = None, *, file: IO[str] | None = None, force: bool | None = None,
                 desc: str = "protocol") -> None:
        self.bar = tqdm(total=total, desc=desc, unit="seed", file=file, leave=True, mininterval=0,
                        dynamic_ncols=True, bar_format=PROTOCOL_FORMAT, disable=not enabled(file, force))
        self.measured: dict[str, list[float]] = {}  # label -> seconds of each seed run (not resumed) here
        self.grows = total is None  # None: the total is the seeds of the runs started so far
        self.total, self.done = total or 0, 0
        self.label, self.seeds, self.done_here = "", 0, 0

    def start(self, label: str, seeds: int) -> None:
        if self.grows:
            self.total += seeds
            self.bar.total = self.total
        self.label, self.seeds, self.done_here = label, seeds, 0
        self.measured.setdefault(label, [])

    def running(self) -> None:
        """The next seed of the current run starts (shown as 'seed i/n')."""
        self.bar.set_description_str(f"{self.label} seed {self.done_here + 1}/{self.seeds}", refresh=False)
        self._show_eta()

    def resumed(self) -> None:
        self._advance()

    def finished(self, seconds: float) -> None:
        self.measured[self.label].append(seconds)
        self._advance()

    def eta(self) -> float | None:
        """Seconds left: the seeds left times the mean measured seconds per seed (None before any is measured)."""
        every = [s for seconds in self.measured.values() for s in seconds]
        if not every:
            return None
        here = self.measured.get(self.label) or every
        left_here = max(0, self.seeds - self.done_here)
        left_after = max(0, self.total - self.done - left_here)
        return left_here * sum(here) / len(here) + left_after * sum(every) / len(every)

    def close(self) -> None:
        self.bar.close()

    def __enter__(self) -> Protocol:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _advance(self) -> None:
        self.done, self.done_here = self.done + 1, self.done_here + 1
        self.bar.set_description_str(f"{self.label} seed {self.done_here}/{self.seeds}", refresh=False)
        self._show_eta(refresh=False)
        self.bar.update(1)
        self.bar.refresh()

    def _show_eta(self, refresh: bool = True) -> None:
        eta = self.eta()
        self.bar.set_postfix_str(f"ETA {'?' if eta is None else format_seconds(eta)}", refresh=refresh)
