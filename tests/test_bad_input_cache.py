"""``make clean-cache`` empties only a folder the suite's marker identifies as its cache (issue 38: with
REPLICATIONS_CACHE=~/.cache it once deleted the whole of ~/.cache, pip's files included)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from shared.cache_marker import MARKER, CacheError, claim_cache, clean_cache, is_marked, main
from shared.paths import REPO_ROOT


def _someone_elses(folder: Path) -> Path:
    """A folder like ~/.cache: other programs' files, no marker."""
    (folder / "pip" / "wheels").mkdir(parents=True)
    (folder / "pip" / "wheels" / "x.whl").write_bytes(b"w" * 100)
    return folder


def _suites(folder: Path, monkeypatch) -> Path:
    """The suite's cache as a run leaves it: created (and marked) by the suite, then filled."""
    monkeypatch.setenv("REPLICATIONS_CACHE", str(folder))
    assert claim_cache() == folder and is_marked(folder)
    (folder / "downloads" / "IMDB").mkdir(parents=True)
    (folder / "downloads" / "IMDB" / "imdb.zip").write_bytes(b"z" * 2048)
    (folder / ".downloads.lock").touch()
    return folder


def test_the_suite_marks_the_cache_it_creates_or_finds_empty(tmp_path, monkeypatch):
    monkeypatch.setenv("REPLICATIONS_CACHE", str(tmp_path / "new" / "cache"))
    assert is_marked(claim_cache())
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("REPLICATIONS_CACHE", str(tmp_path / "empty"))
    assert is_marked(claim_cache())


def test_a_folder_with_others_files_is_never_marked(tmp_path, monkeypatch):
    monkeypatch.setenv("REPLICATIONS_CACHE", str(_someone_elses(tmp_path / "dot-cache")))
    assert not is_marked(claim_cache()) and not (tmp_path / "dot-cache" / MARKER).exists()


def test_clean_empties_a_marked_cache_and_says_what_went(tmp_path, monkeypatch):
    cache = _suites(tmp_path / "cache", monkeypatch)
    said = clean_cache()
    assert said.startswith(f"removed the data cache {cache}: 2 entries (.downloads.lock, downloads)") and "MiB" in said
    assert [p.name for p in cache.iterdir()] == [MARKER]  # the folder and its marker stay
    assert clean_cache() == f"nothing to remove: the data cache {cache} is empty"


def test_clean_refuses_a_folder_without_the_marker(tmp_path, monkeypatch):
    folder = _someone_elses(tmp_path / "dot-cache")
    monkeypatch.setenv("REPLICATIONS_CACHE", str(folder))
    with pytest.raises(CacheError, match=f"refusing to empty REPLICATIONS_CACHE={folder}: it holds no {MARKER} marker"):
        clean_cache()
    assert (folder / "pip" / "wheels" / "x.whl").read_bytes() == b"w" * 100  # untouched


def test_a_stray_file_of_the_markers_name_is_no_marker(tmp_path, monkeypatch):
    folder = _someone_elses(tmp_path / "dot-cache")
    (folder / MARKER).write_text("something else\n")
    monkeypatch.setenv("REPLICATIONS_CACHE", str(folder))
    with pytest.raises(CacheError):
        clean_cache()


def test_a_cache_that_does_not_exist_is_nothing_to_remove(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("REPLICATIONS_CACHE", str(tmp_path / "none"))
    assert main(["clean"]) == 0 and "nothing to remove" in capsys.readouterr().out
    assert main([]) == 2 and "usage: python -m shared.cache_marker clean" in capsys.readouterr().err


def _make_clean(cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "REPLICATIONS_CACHE": str(cache)}
    return subprocess.run(["make", "-s", "clean-cache"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_clean_cache_refuses_in_one_line_and_empties_only_the_marked(tmp_path, monkeypatch):
    folder = _someone_elses(tmp_path / "dot-cache")
    proc = _make_clean(folder)
    error = [line for line in proc.stderr.splitlines() if not line.startswith("make")]  # make's own "Error 2" line
    assert proc.returncode == 2 and len(error) == 1 and error[0].startswith("error: refusing to empty"), proc.stderr
    assert (folder / "pip" / "wheels" / "x.whl").exists()
    cache = _suites(tmp_path / "cache", monkeypatch)
    proc = _make_clean(cache)
    assert proc.returncode == 0 and proc.stdout.startswith(f"removed the data cache {cache}"), proc.stderr
    assert [p.name for p in cache.iterdir()] == [MARKER]
