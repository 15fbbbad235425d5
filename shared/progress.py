"""Progress bars, one look for the whole suite (tqdm): a loop's bar (`bar`) and the protocol's bar (`Protocol`).

Bars go to stderr. On a terminal they are drawn; on a stderr that is not one (a log file, a pipe, a session
without a pty) each bar's state is printed as one plain line at most every ``PLAIN_INTERVAL_S`` seconds
instead (a short loop prints nothing); with ``CI`` set (true/1/yes) nothing is printed.
``REPLICATIONS_PROGRESS=1`` draws bars anyway (``| tee log``), ``=0`` prints nothing; a caller's ``force=``
wins over both. A bar only reads a loop's items, never changes or reorders them, and draws nothing from any
random generator: a run's numbers are the same with bars on or off.

- ``bar(iterable, desc=...)`` wraps a training or measurement loop: one step per item, tqdm's own ETA. It
  stays hidden for its first ``delay`` seconds (a short loop never flashes) and vanishes when done. A loop over
  epochs (``desc="epochs"`` or ``unit="epoch"``) in a run that may stop early (patience) shows its ETA as an
  upper bound, ``<=27:00``: it counts to max_epochs.
- ``Protocol(total)`` is one bar over every (dataset, model, seed) of a protocol (``python -m
  replications.replicate``, shared.runner.run): "<paper>/<dataset>/<model> seed 3/5", and an ETA of the
  seeds left times the measured seconds per seed (this model's seeds once one has run here, else all
  measured ones); seeds resumed from a partial file count as done and add no time. Before any seed has
  finished it is the epoch loop's measured seconds per epoch times the epochs left (this seed's and max_epochs
  for each seed after it): ``<=`` when early stopping may end the seeds sooner.
- ``write(msg)`` prints a line (to stdout, or `file`) above the bars instead of through them.
"""

from __future__ import annotations

import io
import os
import re
import sys
import time
from collections.abc import Iterable
from typing import IO, Any, Literal

from tqdm import tqdm

FORCE_ENV = "REPLICATIONS_PROGRESS"
DELAY_S = 2.0  # a loop's bar appears once the loop has run this long
MININTERVAL_S = 0.5  # at most two redraws a second
PLAIN_INTERVAL_S = 30.0  # off a terminal: a bar's state as one line at most this often
PROTOCOL_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} seeds [{elapsed}{postfix}]"
PROTOCOL_LINE = "progress: {desc}: {n_fmt}/{total_fmt} seeds [{elapsed}{postfix}]"
LOOP_BOUND_FORMAT = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<={remaining}, {rate_fmt}{postfix}]"  # at most
LOOP_LINE = "progress: {desc}: {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]"
LOOP_BOUND_LINE = "progress: {desc}: {n_fmt}/{total_fmt} [{elapsed}<={remaining}, {rate_fmt}{postfix}]"
Style = Literal["bar", "lines"] | None
_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # tqdm's cursor moves between nested bars


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() not in ("", "0", "false", "no", "off")


def style(file: IO[str] | None = None, force: bool | None = None) -> Style:
    """How progress on `file` (default stderr) is shown: "bar" (drawn), "lines" (plain periodic lines) or None.
    `force`, else $REPLICATIONS_PROGRESS, else nothing under CI, a bar on a terminal and lines elsewhere."""
    if force is not None:
        return "bar" if force else None
    if os.environ.get(FORCE_ENV, "").strip():
        return "bar" if _truthy(os.environ[FORCE_ENV]) else None
    if _truthy(os.environ.get("CI")):
        return None
    stream = file if file is not None else sys.stderr
    if stream is None:
        return None
    try:
        return "bar" if stream.isatty() else "lines"
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream: not a terminal
        return "lines"


def enabled(file: IO[str] | None = None, force: bool | None = None) -> bool:
    """Whether a bar is drawn on `file` (default stderr): see `style`."""
    return style(file, force) == "bar"


class _Lines:
    """The file a bar writes to off a terminal: keeps the bar's latest state and prints it as one plain line at
    most every PLAIN_INTERVAL_S seconds (the first after one interval, so a short loop prints nothing)."""

    def __init__(self, stream: IO[str], interval: float | None = None) -> None:
        self.stream = stream
        self.interval = PLAIN_INTERVAL_S if interval is None else interval
        self.last = time.monotonic()
        self.state = self.printed = ""

    def write(self, text: str) -> int:
        for part in re.split(r"[\r\n]", _ESCAPE.sub("", text)):
            if part.strip():
                self.state = part.strip()
        if self.state and self.state != self.printed and time.monotonic() - self.last >= self.interval:
            self.last, self.printed = time.monotonic(), self.state
            self.stream.write(self.state + "\n")
            self.stream.flush()
        return len(text)

    def flush(self) -> None:
        pass


def _size(stream: IO[str] | None) -> dict[str, Any]:
    """tqdm's size options for a bar on `stream`. A terminal that reports no size (0 x 0: `script` without a
    terminal around it, some serial and container consoles) would make tqdm draw nothing at all (it takes
    -1 rows): a fixed 80 x 24 there instead of following the window."""
    try:
        columns, rows = os.get_terminal_size((stream if stream is not None else sys.stderr).fileno())
    except (AttributeError, ValueError, OSError, io.UnsupportedOperation):  # a StringIO, a closed stream: tqdm's way
        return {"dynamic_ncols": True}
    if columns > 1 and rows > 1:
        return {"dynamic_ncols": True}
    return {"dynamic_ncols": False, "ncols": 79, "nrows": 23}


def _target(file: IO[str] | None, force: bool | None) -> tuple[Style, IO[str] | None, dict[str, Any]]:
    """The style, the file tqdm writes to (the stream itself for a bar, a _Lines around it for lines) and
    tqdm's size options."""
    shown = style(file, force)
    if shown == "lines":
        return shown, _Lines(file if file is not None else sys.stderr), {"dynamic_ncols": False}
    return shown, file, _size(file) if shown == "bar" else {}


def _counts_epochs(desc: str, unit: str) -> bool:
    return unit == "epoch" or desc.strip().lower() == "epochs"


class _Loop(tqdm):
    """A loop's bar that tells the protocol's bar how far an epoch loop has come (its ETA before any seed ends)."""

    protocol: Protocol | None = None

    def display(self, msg: str | None = None, pos: int | None = None) -> bool:
        shown = super().display(msg, pos)
        if self.protocol is not None:
            self.protocol.epochs(self.n, self.total, self.format_dict["elapsed"])
        return shown


def bar(iterable: Iterable | None = None, *, desc: str, total: int | None = None, unit: str = "it",
        file: IO[str] | None = None, force: bool | None = None, delay: float = DELAY_S, **kwargs: Any) -> tqdm:
    """A loop's bar: iterate it like `iterable`, or call .update(n) (then give `total`); use it as a context
    manager when the loop may stop early. Disabled (see `style`), it yields the items and draws nothing."""
    shown, target, size = _target(file, force)
    protocol = _ACTIVE[-1] if _ACTIVE and _counts_epochs(desc, unit) else None
    bound = protocol is not None and protocol.may_stop_early  # counted to max_epochs: early stopping may end it sooner
    formats = (LOOP_BOUND_LINE, LOOP_LINE) if shown == "lines" else (LOOP_BOUND_FORMAT, None)  # None: tqdm's own
    options = {"leave": False, "mininterval": MININTERVAL_S, "bar_format": formats[0] if bound else formats[1]} | size | kwargs
    loop = _Loop(iterable, desc=desc, total=total, unit=unit, file=target, delay=delay, disable=shown is None, **options)
    loop.protocol = protocol
    return loop


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
        shown, target, size = _target(file, force)
        self.bar = tqdm(total=total, desc=desc, unit="seed", file=target, leave=True, mininterval=0,
                        bar_format=PROTOCOL_LINE if shown == "lines" else PROTOCOL_FORMAT, disable=shown is None, **size)
        self.measured: dict[str, list[float]] = {}  # label -> seconds of each seed run (not resumed) here
        self.grows = total is None  # None: the total is the seeds of the runs started so far
        self.total, self.done = total or 0, 0
        self.label, self.seeds, self.done_here = "", 0, 0
        self.may_stop_early = False  # the current run's seeds may end before max_epochs (patience)
        self.epoch: tuple[int, int, float] | None = None  # the running seed's epoch loop: (done, max, seconds)
        _ACTIVE.append(self)

    def start(self, label: str, seeds: int, may_stop_early: bool = False) -> None:
        """A run of `seeds` seeds starts; `may_stop_early`: early stopping may end a seed before max_epochs."""
        if self.grows:
            self.total += seeds
            self.bar.total = self.total
        self.label, self.seeds, self.done_here = label, seeds, 0
        self.may_stop_early = may_stop_early
        self.measured.setdefault(label, [])

    def epochs(self, done: int, most: int | None, seconds: float) -> None:
        """The running seed's epoch loop: `done` of at most `most` epochs in `seconds` (from its bar, `bar`)."""
        if most:
            self.epoch = (done, most, seconds)
            self._show_eta()

    def running(self) -> None:
        """The next seed of the current run starts (shown as 'seed i/n')."""
        self.bar.set_description_str(f"{self.label} seed {self.done_here + 1}/{self.seeds}", refresh=False)
        self._show_eta()

    def resumed(self) -> None:
        self._advance()

    def finished(self, seconds: float) -> None:
        self.measured[self.label].append(seconds)
        self.epoch = None
        self._advance()

    def eta(self) -> float | None:
        """Seconds left: the seeds left times the mean measured seconds per seed; before any seed is measured, the
        running seed's seconds per epoch times its epochs left and max_epochs for every seed after it (an upper
        bound where early stopping may end them sooner, see `bound`); None before either is measured."""
        every = [s for seconds in self.measured.values() for s in seconds]
        left_here = max(0, self.seeds - self.done_here)
        left_after = max(0, self.total - self.done - left_here)
        if not every:
            if self.epoch is None or self.epoch[0] < 1:
                return None
            done, most, seconds = self.epoch
            per_epoch = seconds / done
            return (max(0, most - done) + max(0, left_here - 1 + left_after) * most) * per_epoch
        here = self.measured.get(self.label) or every
        return left_here * sum(here) / len(here) + left_after * sum(every) / len(every)

    def bound(self) -> bool:
        """Whether `eta` is an upper bound: counted from epochs to max_epochs in a run that may stop early."""
        return self.may_stop_early and not any(self.measured.values())

    def close(self) -> None:
        self.bar.close()
        if self in _ACTIVE:
            _ACTIVE.remove(self)

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
        shown = "?" if eta is None else ("<=" if self.bound() else "") + format_seconds(eta)
        self.bar.set_postfix_str(f"ETA {shown}", refresh=refresh)


_ACTIVE: list[Protocol] = []  # the protocol bars open now: an epoch loop's bar reports to the innermost
