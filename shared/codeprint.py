"""Which code produced a number: a fingerprint of the source files that shape a paper's results at a commit.

Seeds of one protocol may run at different commits (a resumed run, parallel jobs). Their numbers belong in
one record only if the code that computed them is the same; the configs alone cannot tell. The fingerprint
hashes the git blob ids of the Python files of the paper's package, of the packages it imports from
``replications/`` (e.g. the shared MoE layer) and of ``shared/``, leaving out files that only present or
combine results (report, merge, sweep, reference, benchmarks and figures).
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

from shared.paths import REPO_ROOT

PRESENTATION = {"report.py", "merge.py", "sweep.py", "reference.py", "bench.py", "figures.py", "codeprint.py",
                "verify.py"}


def package_dependencies(paper: str, repo: Path = REPO_ROOT) -> list[str]:
    """The paper's package and the replications/ packages it imports (read from today's sources)."""
    found = {paper}
    for path in (repo / "replications" / paper).rglob("*.py"):
        found |= set(re.findall(r"(?:from|import)\s+replications\.(\w+)", path.read_text()))
    return sorted(d for d in found if (repo / "replications" / d).is_dir())


def _shaping_paths(paper: str, repo: Path) -> list[str]:
    return ["shared", *(f"replications/{d}" for d in package_dependencies(paper, repo))]


def _digest(entries: list[str]) -> str | None:
    return hashlib.sha256("\n".join(sorted(entries)).encode()).hexdigest() if entries else None


PRESENTATION_PACKAGES = ("shared/report/",)  # the pages: what they show, never what a run computes


def _shapes(path: str) -> bool:
    return path.endswith(".py") and Path(path).name not in PRESENTATION and not path.startswith(PRESENTATION_PACKAGES)


def code_fingerprint(commit: str, paper: str, repo: Path = REPO_ROOT) -> str | None:
    """sha256 over (path, blob id) of the files that shape the paper's numbers at `commit`; None if the
    commit is not in this repository."""
    try:
        out = subprocess.run(["git", "ls-tree", "-r", commit, "--", *_shaping_paths(paper, repo)], cwd=repo,
                             capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    entries = []
    for line in out.splitlines():
        meta, path = line.split("\t", 1)
        if _shapes(path):
            entries.append(f"{path} {meta.split()[2]}")
    return _digest(entries)


def worktree_fingerprint(paper: str, repo: Path = REPO_ROOT) -> str | None:
    """code_fingerprint of the files as they are on disk now (tracked files, uncommitted edits included): equal to
    code_fingerprint(HEAD) on a clean tree, different after an edit that a commit alone would not show (git_dirty).
    None outside a git checkout."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--", *_shaping_paths(paper, repo)], cwd=repo,
                             capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    entries = []
    for path in filter(None, out.split("\0")):
        if _shapes(path) and (repo / path).is_file():  # a tracked file deleted on disk is absent from the code
            data = (repo / path).read_bytes()
            blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # what `git hash-object` prints
            entries.append(f"{path} {blob}")
    return _digest(entries)
