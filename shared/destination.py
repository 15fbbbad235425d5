"""Where a run writes its result files: only the paper's protocol may write the committed results/.

`make replicate-<paper>` (replications.replicate) runs the protocol with the committed config inside
`protocol()`; every other run (by hand, with an override, a sweep, a smoke run) writes under
outputs/results/<run name>/ (``run_name``: its overrides, so runs with other settings never overwrite
each other) or the `paths.results_dir` it names, and is refused one inside results/. So no run made by
hand can replace a committed record or its partial file.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from omegaconf import DictConfig, OmegaConf, open_dict

from shared.paths import HAND_RUNS, SMOKE_RUNS
from shared.paths import RESULTS as COMMITTED

_in_protocol = False

# Overrides that do not name a hand run's folder: the choices its path already holds (<paper>/<dataset>/<model>;
# model.lr does name it), where and how it runs (the same numbers), and where it writes.
CHOICES = ("paper", "dataset", "model")
UNNAMED = ("tracker", "device", "paths", "hydra")
DEFAULT_RUN = "default"  # a hand run of the committed config: no override changes what it computes
MAX_NAME = 120  # a folder name stays well under the file systems' 255 bytes


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


def run_name(overrides: Iterable[str]) -> str:
    """A hand run's folder name, from the overrides that change what it computes: sorted, ``k=v`` joined by
    commas (as Hydra's override_dirname), e.g. ``model.lr=0.1,seed=1``; ``default`` when none. The same
    command always gets the same folder (it resumes from its partial file); other settings never share one."""
    kept = []
    for override in overrides:
        key = override.split("=", 1)[0].lstrip("+~")
        head = re.split(r"[./]", key, maxsplit=1)[0]
        if key in CHOICES or head in UNNAMED:
            continue
        kept.append(re.sub(r"[^\w.,=+~\-\[\]:@%]", "_", override))  # no '/' or spaces in a folder name
    name = ",".join(sorted(kept)) or DEFAULT_RUN
    if len(name) > MAX_NAME:  # still one folder per setting: a prefix to read, a digest to tell them apart
        name = f"{name[:MAX_NAME - 9]}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
    return name


def name_hand_run(cfg: DictConfig, overrides: Iterable[str]) -> None:
    """Give a hand run its own folder, ``paths.results_dir = <paths.hand_runs>/<run_name(overrides)>``: two hand
    runs with other settings never overwrite each other's result. Not for a run that names its results_dir
    (or a --multirun job, given Hydra's job folder), a scale=smoke run (outputs/smoke-results/) or the protocol."""
    paths = cfg.get("paths")
    if _in_protocol or paths is None or (cfg.get("scale") or {}).get("name") == "smoke":
        return
    if OmegaConf.to_container(paths, resolve=False).get("results_dir"):  # unresolved: a sweep's ${hydra:...} counts
        return
    with open_dict(cfg):
        cfg.paths.results_dir = str(Path(paths.get("hand_runs") or HAND_RUNS) / run_name(overrides))


def _inside(path: Path, folder: Path) -> bool:
    path, folder = path.resolve(), folder.resolve()
    return path == folder or folder in path.parents


def results_root(cfg: DictConfig) -> Path:
    """The folder holding <paper>/<dataset>/<model>.json for this run, from the ``paths`` group
    (conf/paths/default.yaml): its results_dir when set, else the smoke folder for scale=smoke, else results/
    for the protocol, else the hand-run folder (the entry points give each hand run its own, ``name_hand_run``).
    A config without the group (a test's hand-made one) gets the same defaults."""
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
