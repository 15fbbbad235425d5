"""Where a run writes its result files: only the paper's protocol may write the committed results/.

`make replicate-<paper>` (replications.replicate) runs the protocol with the committed config inside
`protocol()`; every other run (by hand, with an override, a sweep, a smoke run) writes under
outputs/results/ or the `paths.results_dir` it names, and is refused one inside results/. So no
run made by hand can replace a committed record or its partial file.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from omegaconf import DictConfig

from shared.paths import HAND_RUNS, SMOKE_RUNS
from shared.paths import RESULTS as COMMITTED

_in_protocol = False


class DestinationError(ValueError):
    """A run that is not the paper's protocol asked to write into the committed results/."""


@contextmanager
def protocol() -> Iterator[None]:
    """Runs inside this block are the paper's protocol with the committed config: they write results/."""
    global _in_protocol
    saved, _in_protocol = _in_protocol, True
    try:
        yield
    finally:
        _in_protocol = saved


def is_protocol() -> bool:
    return _in_protocol


def _inside(path: Path, folder: Path) -> bool:
    path, folder = path.resolve(), folder.resolve()
    return path == folder or folder in path.parents


def results_root(cfg: DictConfig) -> Path:
    """The folder holding <paper>/<dataset>/<model>.json for this run, from the ``paths`` group
    (conf/paths/default.yaml): its results_dir when set, else the smoke folder for scale=smoke, else results/
    for the protocol, else the hand-run folder. A config without the group (a test's hand-made one) gets the same defaults."""
    paths = cfg.get("paths") or {}
    chosen = paths.get("results_dir")
    if chosen:
        root = Path(chosen)
    elif (cfg.get("scale") or {}).get("name") == "smoke":  # a smoke run is never the protocol's record
        root = Path(paths.get("smoke_runs") or SMOKE_RUNS)
    elif _in_protocol:
        return COMMITTED
    else:
        root = Path(paths.get("hand_runs") or HAND_RUNS)
    if _inside(root, COMMITTED):
        raise DestinationError(
            f"paths.results_dir {root} is inside the committed {COMMITTED}, which only the paper's protocol "
            f"(make replicate-<paper>, committed config) writes; choose another paths.results_dir"
        )
    return root
