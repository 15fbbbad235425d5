"""Paper replication packages. Each ``replications/<paper>/`` exposes ``REPLICATION`` (see shared.replication)."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

try:  # a Python without the suite's packages (the system python3, not the venv): one line, how to fix it
    import hydra  # noqa: F401
    import omegaconf  # noqa: F401
    import torch  # noqa: F401
except ModuleNotFoundError as exc:
    print(f"error: {exc.name} is not installed in this Python ({sys.executable}); run `make venv`, then use "
          ".venv/bin/python (or `source .venv/bin/activate`, or the `replications` command it installs)", file=sys.stderr)
    raise SystemExit(2) from None

from shared.replication import Replication  # noqa: E402

PACKAGE_DIR = Path(__file__).parent


def available() -> list[str]:
    """Paper packages found on disk: folders holding a paper.yaml."""
    return sorted(p.name for p in pkgutil.iter_modules([str(PACKAGE_DIR)]) if (PACKAGE_DIR / p.name / "paper.yaml").exists())


def get(paper: str) -> Replication:
    if paper not in available():
        raise KeyError(f"unknown paper '{paper}'; valid: {', '.join(available())}")
    return importlib.import_module(f"replications.{paper}").REPLICATION
