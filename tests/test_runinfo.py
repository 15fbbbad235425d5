"""Provenance: a result file rewritten by the protocol does not make the code 'dirty'; an edited source file does."""

from __future__ import annotations

import subprocess

from shared.runinfo import environment


def _git(repo, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True, capture_output=True)


def test_dirty_flag_ignores_results_but_not_code(tmp_path, monkeypatch):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "r.json").write_text("{}")
    (tmp_path / "code.py").write_text("x = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "init")
    monkeypatch.chdir(tmp_path)
    assert environment()["git_dirty"] is False
    (tmp_path / "results" / "r.json").write_text('{"new": 1}')
    assert environment()["git_dirty"] is False
    (tmp_path / "code.py").write_text("x = 2\n")
    assert environment()["git_dirty"] is True
