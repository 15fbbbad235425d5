"""Issue 38, inside a run and the data layer: W&B offline stays quiet, progress shows on any terminal with an honest
ETA, a resume never mixes code silently, partial files stay out of git, and the data layer's messages name the
real problem (a mirror one level off, a folder for a file, a full disk, an OFFICIAL_CODE_DIR without git)."""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from shared import progress, runner
from shared.codeprint import code_fingerprint, worktree_fingerprint
from shared.data import DataError, DatasetSpec, RemoteFile, fetch
from shared.data.derived import cached_file
from shared.data.fetch import NoSpaceError, extract_zip
from shared.official import OfficialError
from shared.official.runner import code_source
from shared.paths import REPO_ROOT, RESULTS
from shared.runner import MIXED_CODE_ENV, MixedCodeResumeError, may_stop_early, run
from tests.conftest import compose_cfg
from tests.test_runner import Toy, _cfg, paper_file  # noqa: F401  (fixture)

PAYLOAD = b"node\tdata\n" * 50


@pytest.fixture(autouse=True)
def automatic(monkeypatch):
    monkeypatch.delenv(progress.FORCE_ENV, raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(MIXED_CODE_ENV, raising=False)


def _spec() -> DatasetSpec:
    return DatasetSpec("toy", "Toy", (RemoteFile("toy.dat", "file:///nonexistent/toy.dat",
                                                 hashlib.sha256(PAYLOAD).hexdigest(), len(PAYLOAD)),))


def _one_line(message: str) -> None:
    assert "\n" not in message and "Traceback" not in message


# --- 1. W&B offline prints nothing during a run, one line at the end ------------------------------------------

def test_wandb_offline_is_silent_and_ends_with_one_line_naming_the_folder(tmp_path, monkeypatch, capfd):
    pytest.importorskip("wandb")
    from shared.tracking import WandbTracker

    for name in ("WANDB_API_KEY", "WANDB_SILENT", "WANDB_CONSOLE", "WANDB_MODE"):
        monkeypatch.delenv(name, raising=False)
    for name, sub in (("WANDB_DIR", "wandb_dir"), ("WANDB_CACHE_DIR", "cache"), ("WANDB_DATA_DIR", "data"),
                      ("WANDB_CONFIG_DIR", "config"), ("WANDB_ARTIFACT_DIR", "artifacts")):
        monkeypatch.setenv(name, str(tmp_path / sub))
        (tmp_path / sub).mkdir()
    cfg = compose_cfg("paper=pshgcn", "dataset=dblp", "tracker=wandb")
    tracker = WandbTracker("test-project", "offline")
    for seed in (1, 2):
        tracker.start(cfg, seed)
        tracker.log({"loss": 1.0 / seed}, 0)
        tracker.finish({"test_micro_f1": 90.0}, {"test_micro_f1": 91.0})
    during = capfd.readouterr()
    assert "wandb" not in (during.out + during.err).lower()  # no banner, no run summary between the seeds
    tracker.finish_protocol({"paper": "pshgcn", "dataset": "dblp", "model": "pshgcn", "aggregate": {}, "comparison": []})
    end = capfd.readouterr()
    lines = [line for line in (end.out + end.err).splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("W&B offline: 2 run(s) saved under ")
    assert str(tmp_path / "wandb_dir" / "wandb") in lines[0] and "wandb sync" in lines[0]


# --- 2. progress on any terminal, with an honest ETA ---------------------------------------------------------

def test_off_a_terminal_progress_is_periodic_plain_lines(monkeypatch):
    quiet = io.StringIO()  # the default interval: a loop of seconds prints nothing
    for _ in progress.bar(range(3), desc="epochs", file=quiet, delay=0):
        pass
    assert quiet.getvalue() == ""

    pipe = io.StringIO()
    assert progress.style(pipe) == "lines" and progress.style(pipe, force=False) is None
    monkeypatch.setattr(progress, "PLAIN_INTERVAL_S", 0.0)
    with progress.Protocol(2, file=pipe) as p:
        p.start("toy/dblp/toy", 2)
        p.running()
        for _ in progress.bar(range(3), desc="epochs", file=pipe, delay=0, mininterval=0):
            time.sleep(0.01)
        p.finished(1.0)
    text = pipe.getvalue()
    assert "\r" not in text and "\x1b" not in text  # no redraws: each state is a line of its own
    assert "progress: toy/dblp/toy seed 1/2: 1/2 seeds" in text and "progress: epochs: 3/3" in text


@pytest.mark.skipif(shutil.which("script") is None, reason="util-linux `script` (a pty) is not installed")
@pytest.mark.parametrize("size", ["", "stty rows 0 cols 0; "])  # the terminal's own size; one that reports none
def test_a_bar_is_drawn_on_a_pseudo_terminal(tmp_path, size):
    code = tmp_path / "bars.py"
    code.write_text("import time\nfrom shared import progress\n"
                    "with progress.Protocol(1) as p:\n    p.start('toy/dblp/toy', 1)\n    p.running()\n"
                    "    for _ in progress.bar(range(3), desc='epochs', delay=0, mininterval=0):\n"
                    "        time.sleep(0.01)\n    p.finished(1.0)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("CI", progress.FORCE_ENV)} | {"PYTHONPATH": str(REPO_ROOT)}
    out = subprocess.run(["script", "-qec", f"{size}{sys.executable} {code}", "/dev/null"], cwd=REPO_ROOT, env=env,
                         capture_output=True, timeout=60)  # bytes: text mode would turn the bar's \r into \n
    shown = out.stdout.decode(errors="replace")
    assert out.returncode == 0, shown + out.stderr.decode(errors="replace")
    assert "1/1 seeds" in shown and "epochs: 100%" in shown and "\r" in shown  # drawn in place


def test_eta_before_a_seed_ends_is_an_upper_bound_from_seconds_per_epoch():
    out = io.StringIO()
    with progress.Protocol(3, file=out, force=True) as p:
        p.start("pshgcn/imdb/rgcn", 3, may_stop_early=True)
        p.running()
        assert p.eta() is None  # nothing measured yet
        p.epochs(10, 1000, 10.0)  # 1 s per epoch: this seed's 990 left, then 1000 for each of the two after it
        assert p.eta() == pytest.approx(990 + 2 * 1000) and p.bound()
        assert "ETA <=49:50" in out.getvalue()
        p.finished(294.0)  # the seed stopped early after 4:54
        assert p.eta() == pytest.approx(2 * 294.0) and not p.bound()  # measured per seed, no longer a bound
        assert out.getvalue().rstrip().endswith("ETA 09:48]")


def test_an_epoch_loop_that_may_stop_early_shows_its_eta_as_at_most():
    with progress.Protocol(1, force=False) as p:
        p.start("pshgcn/imdb/rgcn", 1, may_stop_early=True)
        out = io.StringIO()
        for _ in progress.bar(range(4), desc="epochs", file=out, force=True, delay=0, mininterval=0):
            time.sleep(0.01)
        assert "<=" in out.getvalue()
        assert p.epoch is not None and p.epoch[1] == 4  # the protocol's ETA learns the seconds per epoch
        plain = io.StringIO()  # a loop over batches is not cut short by patience
        for _ in progress.bar(range(4), desc="batches", file=plain, force=True, delay=0, mininterval=0):
            time.sleep(0.01)
        assert "<=" not in plain.getvalue()


def test_runner_knows_when_a_seed_may_stop_early():
    assert may_stop_early(compose_cfg("paper=pshgcn", "dataset=imdb", "model=rgcn"))  # patience 100 of 1000 epochs
    assert not may_stop_early(compose_cfg("paper=pshgcn", "dataset=imdb", "model=rgcn", "scale.patience=2000"))


# --- 3. resume keeps the code identity of each seed ----------------------------------------------------------

def _interrupted(tmp_path, paper_file) -> Path:  # noqa: F811
    with pytest.raises(RuntimeError, match="interrupted"):
        run(_cfg(tmp_path), Toy(paper_file, fail_at_seed=2))
    return tmp_path / "results" / "pshgcn" / "dblp" / "pshgcn.partial.json"


def test_resume_by_the_same_code_records_one_fingerprint(tmp_path, paper_file):  # noqa: F811
    partial = _interrupted(tmp_path, paper_file)
    here = runner.code_identity("pshgcn")
    assert [r["code_fingerprint"] for r in json.loads(partial.read_text())["runs"]] == [here]
    record = run(_cfg(tmp_path), Toy(paper_file))
    assert record["code_fingerprint"] == here and "mixed_code" not in record


def test_resume_after_a_code_change_is_refused_in_one_line_or_marked_mixed(tmp_path, paper_file, monkeypatch):  # noqa: F811
    partial = _interrupted(tmp_path, paper_file)
    before = partial.read_bytes()
    monkeypatch.setitem(runner._CODE, "pshgcn", "f" * 64)  # the code was edited since seed 1 ran
    with pytest.raises(MixedCodeResumeError) as err:
        run(_cfg(tmp_path), Toy(paper_file))
    message = str(err.value)
    _one_line(message)
    assert "seeds [1] made by other code" in message and f"delete {partial}" in message and MIXED_CODE_ENV in message
    assert partial.read_bytes() == before  # nothing lost

    monkeypatch.setenv(MIXED_CODE_ENV, "1")
    record = run(_cfg(tmp_path), Toy(paper_file))
    assert record["code_fingerprint"] is None
    assert record["mixed_code"] == {json.loads(before)["runs"][0]["code_fingerprint"][:10]: [1], "f" * 10: [2, 3]}


def test_worktree_fingerprint_sees_uncommitted_edits(tmp_path):
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                       capture_output=True)

    (tmp_path / "shared").mkdir()
    (tmp_path / "replications" / "p").mkdir(parents=True)
    (tmp_path / "shared" / "a.py").write_text("x = 1\n")
    (tmp_path / "replications" / "p" / "train.py").write_text("y = 2\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "c")
    assert worktree_fingerprint("p", tmp_path) == code_fingerprint("HEAD", "p", tmp_path)  # clean: the commit's
    (tmp_path / "replications" / "p" / "train.py").write_text("y = 3\n")
    assert worktree_fingerprint("p", tmp_path) != code_fingerprint("HEAD", "p", tmp_path)


# --- 4. a partial file is never an untracked file in results/ -------------------------------------------------

def test_a_partial_file_in_results_is_ignored_by_git():
    partial = (RESULTS / "pshgcn" / "imdb" / "rgcn.partial.json").relative_to(REPO_ROOT)
    out = subprocess.run(["git", "check-ignore", "--no-index", "-q", str(partial)], cwd=REPO_ROOT)
    assert out.returncode == 0, f"{partial} would show in git status as untracked: add it to .gitignore"
    result = partial.with_name("rgcn.json")
    assert subprocess.run(["git", "check-ignore", "--no-index", "-q", str(result)], cwd=REPO_ROOT).returncode == 1


# --- 5-7. the data layer's messages -------------------------------------------------------------------------

@pytest.mark.parametrize("level", ["too high", "too deep"])
def test_a_mirror_one_level_off_says_so(tmp_path, fresh_cache, monkeypatch, level):
    data = tmp_path / "shared" / "data"
    (data / "Toy").mkdir(parents=True)
    (data / "Toy" / "toy.dat").write_bytes(PAYLOAD)
    (data / "Other").mkdir()
    given = tmp_path / "shared" if level == "too high" else data / "Other"
    monkeypatch.setenv("REPLICATIONS_MIRROR", str(given))
    with pytest.raises(DataError) as err:
        fetch(_spec())
    message = str(err.value)
    _one_line(message)
    assert f"REPLICATIONS_MIRROR={given} holds no dataset folders (expected e.g. {given / 'Toy'}/...)" in message
    assert message.endswith(f"did you mean REPLICATIONS_MIRROR={data}?") and "internet" not in message


def test_a_folder_where_a_file_should_be_is_named_as_a_folder(tmp_path, fresh_cache, monkeypatch):
    (tmp_path / "mirror" / "Toy" / "toy.dat").mkdir(parents=True)
    monkeypatch.setenv("REPLICATIONS_MIRROR", str(tmp_path / "mirror"))
    with pytest.raises(DataError) as err:
        fetch(_spec())
    assert "is a folder, not the file toy.dat" in str(err.value) and "truncated" not in str(err.value)


def _full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_while_extracting_is_one_line_and_leaves_nothing(tmp_path, fresh_cache, monkeypatch):
    archive = tmp_path / "data.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("node.dat", PAYLOAD)
    monkeypatch.setattr(zipfile.ZipFile, "extractall", _full_disk)
    with pytest.raises(NoSpaceError) as err:
        extract_zip(archive, "0" * 64)
    message = str(err.value)
    _one_line(message)
    assert message.startswith(f"no space left on device while extracting data.zip into {fresh_cache}")
    assert "free 0.0 GB" in message and "REPLICATIONS_CACHE" in message
    assert not [p for p in (fresh_cache / "extracted").iterdir() if not p.name.endswith(".lock")]


def test_a_full_disk_while_writing_a_derived_file_is_one_line(tmp_path, fresh_cache):
    target = fresh_cache / "processed" / "x.pt"
    with pytest.raises(NoSpaceError, match="no space left on device while writing x.pt into"):
        cached_file(target, lambda: 1, lambda value, path: _full_disk(), lambda path: 1)
    assert not [p for p in target.parent.iterdir() if not p.name.endswith(".lock")]


# --- 8. OFFICIAL_CODE_DIR without a git checkout ------------------------------------------------------------

def test_official_code_dir_without_git_says_so_and_how_to_get_one(tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("OFFICIAL_CODE_DIR", str(empty))
    spec = SimpleNamespace(repository="https://github.com/ivam-he/PSHGCN")
    with pytest.raises(OfficialError) as err:
        code_source(spec)
    message = str(err.value)
    _one_line(message)
    assert f"OFFICIAL_CODE_DIR={empty} holds no git checkout of {spec.repository}" in message
    assert f"git clone {spec.repository} {empty}" in message and "does not exist" not in message
    (empty / ".git").mkdir()  # a checkout is taken as it is
    assert code_source(spec) == str(empty)
