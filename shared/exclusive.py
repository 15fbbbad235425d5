"""File locks (fcntl): one writer per cache entry, and benchmarks that run alone among the project's jobs.

``file_lock(path)`` holds an advisory ``flock`` on a lock file; several processes (or threads: each call opens
its own descriptor) queue on it, and the kernel drops it when its holder exits, even on a crash, so a killed
run never leaves a stale lock behind. Lock files stay where they are (0 bytes): deleting one while another
process waits on it would let a third take a fresh lock next to the waiter's.

``exclusive(name)`` is how a benchmark runs alone on a shared machine without anything outside the project:
every bench script (and ``python -m shared.exclusive -- <command>``) takes the same lock,
``<cache>/locks/bench.lock`` (``$REPLICATIONS_CACHE``, default ``~/.cache/replications``), so two of
them never time each other. It records how long it waited and the 1-minute load average before and after
(other programs on the machine do not take the lock: the load average shows whether they were busy).
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from shared.cache_marker import claim_cache

BENCH_LOCK = "bench"
LABEL = "run alone (shared.exclusive lock)"


def lock_beside(path: Path) -> Path:
    """The lock file guarding `path` (a cache file or folder): hidden, next to it."""
    path = Path(path)
    return path.parent / f".{path.name}.lock"


@contextmanager
def file_lock(lock: Path, shared: bool = False) -> Iterator[None]:
    """Hold an flock on `lock` (created if absent): exclusive, or shared with other readers."""
    lock = Path(lock)
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def load_1min() -> float:
    return round(os.getloadavg()[0], 2)


def bench_lock_path(name: str = BENCH_LOCK) -> Path:
    return claim_cache() / "locks" / f"{name}.lock"  # the one cache folder ($REPLICATIONS_CACHE), marked as the suite's


@contextmanager
def exclusive(name: str = BENCH_LOCK) -> Iterator[dict]:
    """Run the block alone among the project's benchmarks; yields a record for the benchmark's output.

    The record (``how``, ``waited_s``, ``load_1min_before``; ``load_1min_after`` and ``held_s`` are filled
    in when the block ends) belongs in the figures the benchmark writes, beside its timings.
    """
    record: dict = {"how": LABEL}
    lock = bench_lock_path(name)
    asked = time.perf_counter()
    with file_lock(lock):
        got = time.perf_counter()
        record.update(waited_s=round(got - asked, 1), load_1min_before=load_1min())
        try:
            yield record
        finally:
            record.update(load_1min_after=load_1min(), held_s=round(time.perf_counter() - got, 1))


def main(argv: list[str] | None = None) -> int:
    """``python -m shared.exclusive [--name N] -- command ...``: run a command under the bench lock."""
    args = list(sys.argv[1:] if argv is None else argv)
    name = BENCH_LOCK
    if args[:1] == ["--name"] and len(args) > 1:
        name, args = args[1], args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        print(main.__doc__, file=sys.stderr)
        return 2
    with exclusive(name) as record:
        print(f"{LABEL}: waited {record['waited_s']} s, 1-min load {record['load_1min_before']}", file=sys.stderr)
        rc = subprocess.call(args)
    print(f"{LABEL}: held {record['held_s']} s, 1-min load {record['load_1min_before']} -> "
          f"{record['load_1min_after']}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
