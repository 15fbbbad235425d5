"""Paper replication packages. Each ``replications/<paper>/`` exposes ``REPLICATION`` (see shared.replication)."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from shared.replication import Replication

PACKAGE_DIR = Path(__file__).parent


def available() -> list[str]:
    """Paper packages found on disk: folders holding a paper.yaml."""
    return sorted(p.name for p in pkgutil.iter_modules([str(PACKAGE_DIR)]) if (PACKAGE_DIR / p.name / "paper.yaml").exists())


def get(paper: str) -> Replication:
    if paper not in available():
        raise KeyError(f"unknown paper '{paper}'; valid: {', '.join(available())}")
    return importlib.import_module(f"replications.{paper}").REPLICATION
