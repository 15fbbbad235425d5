"""Provenance: seeds from different code are not merged silently; no absolute paths; commit fixed at process start."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from shared.codeprint import code_fingerprint
from shared.merge import MixedCodeError, check_same_code
from shared.paths import REPO_ROOT
from shared.runinfo import portable_paths


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                         capture_output=True, text=True)
    return out.stdout.strip()


def _commit(repo: Path, files: dict[str, str]) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "c")
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path) -> tuple[Path, dict[str, str]]:
    _git(tmp_path, "init", "-q")
    c1 = _commit(tmp_path, {"shared/runner.py": "a = 1\n", "shared/report.py": "r = 1\n",
                            "replications/p/model.py": "from replications.q import x\n", "replications/q/x.py": "x = 1\n",
                            "replications/other/m.py": "m = 1\n"})
    c2 = _commit(tmp_path, {"shared/report.py": "r = 2\n", "replications/other/m.py": "m = 2\n"})  # presentation / unrelated
    c3 = _commit(tmp_path, {"replications/q/x.py": "x = 2\n"})  # a package p imports: its numbers may change
    return tmp_path, {"c1": c1, "c2": c2, "c3": c3}


def _records(*commits: str) -> list[dict]:
    return [{"runs": [{"seed": i, "git_commit": c}]} for i, c in enumerate(commits)]


def test_fingerprint_ignores_presentation_and_unrelated_packages_but_not_dependencies(repo):
    root, c = repo
    assert code_fingerprint(c["c1"], "p", root) == code_fingerprint(c["c2"], "p", root)
    assert code_fingerprint(c["c2"], "p", root) != code_fingerprint(c["c3"], "p", root)
    assert code_fingerprint("0" * 40, "p", root) is None


def test_merge_refuses_seeds_from_different_code_unless_told(repo):
    root, c = repo
    ok = check_same_code(_records(c["c1"], c["c2"]), "p", repo=root)
    assert ok["git_commits"] == sorted([c["c1"], c["c2"]]) and ok["code_fingerprint"] and "mixed_code" not in ok
    with pytest.raises(MixedCodeError, match="code differs"):
        check_same_code(_records(c["c1"], c["c3"]), "p", repo=root)
    with pytest.raises(MixedCodeError, match="not in this repository"):
        check_same_code(_records(c["c1"], "f" * 40), "p", repo=root)
    marked = check_same_code(_records(c["c1"], c["c3"]), "p", allow_mixed=True, repo=root)
    assert marked["code_fingerprint"] is None and len(marked["mixed_code"]) == 2


def test_paths_inside_the_repo_are_stored_relative():
    text = f"python -m shared.merge {REPO_ROOT}/results/x.json results_dir={REPO_ROOT}"
    assert portable_paths(text) == "python -m shared.merge results/x.json results_dir=."
    assert str(REPO_ROOT) not in portable_paths(text)
    # Outside the repository: only the last two parts survive, so no machine's layout is recorded.
    assert portable_paths("merge results_dir=/scratch/jobs/shards/acm12") == "merge results_dir=.../shards/acm12"
    assert portable_paths("python -m replications seed=1") == "python -m replications seed=1"


def test_runner_takes_the_commit_once_at_process_start(monkeypatch):
    import shared.runner as runner

    calls = []
    monkeypatch.setattr("shared.runinfo.git_state", lambda: calls.append(1) or {"git_commit": "moved", "git_dirty": True})
    env = runner.environment(runner.PROCESS_START_GIT)
    assert calls == [] and env["git_commit"] == runner.PROCESS_START_GIT["git_commit"]
