"""Where the project's folders are: the one home of every path a writer or reader needs.

The checkout is found once, from this package's location; every other module asks here (never its own
``__file__``). ``results_root(cfg)`` (shared.destination) picks the results folder of a run from the
``paths`` config group (conf/paths/default.yaml) and these.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
CONF_DIR = REPO_ROOT / "conf"
RESULTS = REPO_ROOT / "results"  # the committed results: only a paper's protocol writes here
PAPERS_DIR = REPO_ROOT / "replications"
HAND_RUNS = Path("outputs") / "results"  # a run by hand, relative to the working directory like Hydra's outputs/
SMOKE_RUNS = Path("outputs") / "smoke-results"  # a scale=smoke run (conf/paths/default.yaml names both)


def cache_folder() -> Path:
    """The data cache: $REPLICATIONS_CACHE, else ~/.cache/replications (not created here)."""
    value = os.environ.get("REPLICATIONS_CACHE")
    return Path(value).expanduser() if value else Path.home() / ".cache" / "replications"
