"""What a result file records about how it was made: command, versions, hardware, git state."""

from __future__ import annotations

import platform
import re
import resource
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import torch

from shared.paths import REPO_ROOT

PACKAGES = ["torch", "torch-geometric", "numpy", "scipy", "scikit-learn", "hydra-core", "wandb", "datasets"]


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


def git_state() -> dict:
    """The commit checked out now, and whether code or configs differ from it (results/ excluded: a protocol
    rewrites it as it goes)."""
    return {
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(_git("status", "--porcelain", "--untracked-files=no", "--", ":(top,exclude)results")),
    }


_ABSOLUTE = re.compile(r"(?<![\w.~-])/[^\s\"',\]\[]+")


def portable_paths(text: str, keep: int = 2) -> str:
    """No machine's absolute paths in a result file: paths inside the repository become relative to it, and
    any other absolute path keeps only its last ``keep`` parts (``.../shards/acm12``), enough to tell jobs apart."""
    text = text.replace(f"{REPO_ROOT}/", "").replace(str(REPO_ROOT), ".")
    return _ABSOLUTE.sub(lambda m: ".../" + "/".join(Path(m.group(0)).parts[-keep:]), text)


def environment(git: dict | None = None) -> dict:
    """How a result was made. ``git``: a git_state() taken earlier (the runner takes it at process start, so
    a commit made while a long protocol runs is not credited with numbers the older code produced)."""
    import os

    return {
        "command": portable_paths(" ".join([Path(sys.argv[0]).name, *sys.argv[1:]])),
        **(git or git_state()),
        "versions": versions(),
        "hardware": {
            "cpu": cpu_model(),
            "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        },
        "platform": platform.platform(),
    }


def peak_memory_mb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
