"""A hand run's log beside its result file (<model>.log): what ``python -m replications`` printed and logged."""

from __future__ import annotations

import logging
import shlex
import sys
import time
import traceback
from pathlib import Path
from typing import Any


class RunLog:
    """The run's log beside its result file (<model>.log, appended: a resumed run adds to it): the command, every
    line it prints to stdout or stderr (not a progress bar's redraws), every logging record and, should it stop
    on an exception, the traceback. Held in memory until the run writes its partial or result file, so a run
    refused before its first seed (a corrupt data file) leaves nothing."""

    def __init__(self, result: Path) -> None:
        self.path = result.with_suffix(".log")
        self.watched = (result, result.with_suffix(".partial.json"))
        self.started = time.time()
        self.held: list[str] = []
        self.file: Any = None
        self.checked = 0.0
        command = "python -m replications" if sys.argv[0].endswith(".py") else Path(sys.argv[0]).name
        self.write(f"# {time.strftime('%Y-%m-%d %H:%M:%S')} {command} {shlex.join(sys.argv[1:])}\n")

    def ran(self) -> bool:
        """Whether this run has written its partial or result file (a file from an earlier run does not count)."""
        return any(p.exists() and p.stat().st_mtime >= int(self.started) - 1 for p in self.watched)

    def write(self, text: str) -> int:
        if "\r" in text:  # a progress bar drawing itself: the terminal's, not the log's
            return len(text)
        if self.file is None:
            self.held.append(text)
            if time.monotonic() - self.checked > 1.0:
                self.checked = time.monotonic()
                self._open_if_ran()
        else:
            self.file.write(text)
            self.file.flush()
        return len(text)

    def flush(self) -> None:
        pass

    def _open_if_ran(self) -> None:
        if self.file is None and self.ran():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.file = self.path.open("a", encoding="utf-8")
            self.file.write("".join(self.held))
            self.file.flush()
            self.held = []

    def __enter__(self) -> RunLog:
        self.streams = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _Tee(sys.stdout, self), _Tee(sys.stderr, self)
        self.handler = logging.StreamHandler(self)
        self.handler.setFormatter(logging.Formatter("[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"))
        logging.getLogger().addHandler(self.handler)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        logging.getLogger().removeHandler(self.handler)
        sys.stdout, sys.stderr = self.streams
        if exc is not None and not isinstance(exc, SystemExit):
            self.write("".join(traceback.format_exception(kind, exc, tb)))
        self._open_if_ran()
        if self.file is not None:
            self.file.close()
            print(f"log: {self.path}")


class _Tee:
    """A stream that also writes to the run's log."""

    def __init__(self, stream: Any, log: RunLog) -> None:
        self.stream, self.log = stream, log

    def write(self, text: str) -> int:
        self.log.write(text)
        return self.stream.write(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding: the terminal's
        return getattr(self.stream, name)
