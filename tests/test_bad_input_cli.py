"""The command-line entry points (issue 38): a config that does not compose, a missing dataset=, --help, key=value
given to make, Ctrl-C, a batch too large for the data or for memory: one line each, and a quiet run that ends with
its verdict. In-process where the entry point allows it; one process start per entry point otherwise."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml
from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException

from replications import replicate
from replications.evomoe.train import fit
from shared import destination
from shared.cli_errors import composition_error, interrupted, out_of_memory
from shared.runner import ConfigError, format_rows
from tests.conftest import compose_cfg
from tests.test_runner import Toy, paper_file  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # the console scripts (pyproject [project.scripts])
MIRROR = Path(os.environ.get("REPLICATIONS_MIRROR") or ROOT.parent / "shared" / "data")
needs_tolokers = pytest.mark.skipif(not (MIRROR / "tolokers" / "tolokers.npz").exists(),
                                    reason=f"{MIRROR}/tolokers/tolokers.npz is absent: set REPLICATIONS_MIRROR")


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "WANDB_MODE": "disabled", "OMP_NUM_THREADS": "1",
            "PYTHONUNBUFFERED": "1", **extra}


def make(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """make in the checkout with this interpreter; -o: never (re)install the venv from a test."""
    return subprocess.run(["make", "-s", "--no-print-directory", "-o", ".venv/.installed", f"PY={sys.executable}", *args],
                          cwd=cwd, env=env(), capture_output=True, text=True, timeout=300)


def one_error_line(stderr: str, message: str) -> None:
    """The run's own stderr is one 'error:' line (make adds its own '*** ... Error 2' after it)."""
    lines = [line for line in stderr.strip().splitlines() if not re.match(r"make(\[\d+\])?: \*\*\*", line)]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], stderr
    assert "Traceback" not in stderr and "HYDRA_FULL_ERROR" not in stderr


# --- 1, 2: composition errors -----------------------------------------------------------------------------

@pytest.mark.parametrize("overrides,message", [
    (["paper=pshgcn", "dataset=nosuch"], "paper 'pshgcn' has no dataset 'nosuch'; valid: dblp, acm, imdb, aminer"),
    (["paper=pshgcn", "dataset=acm", "foo=1"], "unknown config key 'foo'; the config has: paper, dataset, model"),
    (["paper=pshgcn", "dataset=acm", "scale.seedz=[1]"], "did you mean scale.seeds=[1]?"),
    (["paper=pshgcn", "dataset=acm", "scale=tiny"], "unknown scale 'tiny'; valid: full, smoke"),
    (["paper=nosuch"], "unknown paper 'nosuch'; valid: evomoe"),
    (["paper=gaga"], "paper 'gaga' needs dataset=<one of: tolokers, yelpchi, amazon, tfinance>"),  # not model/gaga/dblp
    (["paper=gaga", "dataset=acm"], "paper 'gaga' has no dataset 'acm'; valid: tolokers"),
    (["paper=gaga", "dataset=tolokers", "model=mlp"], "valid: gaga/tolokers, gaga_mlp"),
    (["paper=pshgcn", "seed=[1"], "cannot read 'seed=[1': arguments are key=value overrides"),
])
def test_a_config_that_does_not_compose_is_one_line_naming_the_choices(overrides, message):
    with pytest.raises((HydraException, OmegaConfBaseException)) as caught:
        compose_cfg(*overrides)
    line = composition_error(caught.value, overrides)
    assert message in line and "\n" not in line and "search path" not in line, line


@pytest.mark.parametrize("override,message", [("scale=tiny", "unknown scale 'tiny'; valid: full, smoke"),
                                              ("foo=1", "unknown config key 'foo'"),
                                              ("--bogus", "unknown option '--bogus'")])
def test_replicate_refuses_in_one_line(capsys, override, message):
    assert replicate.main(["pshgcn", "dataset=acm", override]) == 2
    one_error_line(capsys.readouterr().err, message)


def test_hand_run_without_dataset_names_the_papers_datasets(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "replications", "paper=gaga", "tracker=none"], cwd=tmp_path, env=env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    one_error_line(proc.stderr, "paper 'gaga' needs dataset=<one of: tolokers, yelpchi, amazon, tfinance>")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("script,args,message", [
    ("replications", ["paper=pshgcn", "dataset=acm", "scale=tiny"], "unknown scale 'tiny'; valid: full, smoke"),
    ("replicate", ["pshgcn", "dataset=acm", "foo=1"], "unknown config key 'foo'"),
])
def test_console_scripts_refuse_in_one_line(tmp_path, script, args, message):
    if not (BIN / script).exists():
        pytest.skip(f"{BIN / script} is not installed: pip install -e . --no-deps")
    proc = subprocess.run([str(BIN / script), *args], cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    one_error_line(proc.stderr, message)


# --- 3: usage --------------------------------------------------------------------------------------------

def test_replicate_help_prints_usage(capsys):
    assert replicate.main(["pshgcn", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: replicate <paper> [key=value ...]") and "papers: evomoe" in out
    assert "tracker=none" in out and "pshgcn: datasets dblp, acm, imdb, aminer" in out
    assert replicate.main(["-h"]) == 0 and "usage:" in capsys.readouterr().out
    assert replicate.main([]) == 2
    one_error_line(capsys.readouterr().err, "name a paper: replicate <paper>")


def test_make_replicate_help_prints_usage():
    proc = make("replicate-pshgcn", "ARGS=--help")
    assert proc.returncode == 0 and proc.stdout.startswith("usage: replicate"), proc.stderr
    assert "LexerNoViableAltException" not in proc.stderr


# --- 4: every key=value given to make reaches the run ---------------------------------------------------

def test_make_passes_every_key_value_as_an_override():
    proc = make("-n", "replicate-pshgcn", "dataset=acm", "tracker=none", "device=cpu", "model.lr=0.1", "+model.x=it's",
                "REPLICATIONS_MIRROR=/elsewhere", "ARGS=--cfg job")
    command = proc.stdout
    assert "dataset=acm" in command and "'tracker=none'" in command and "'device=cpu'" in command
    assert "'model.lr=0.1'" in command and "'+model.x=it'\\''s'" in command and command.rstrip().count("--cfg job") == 1
    assert "REPLICATIONS_MIRROR" not in command  # a variable in capitals is make's or the environment's


def test_make_key_values_reach_the_config_or_are_refused():
    shown = make("replicate-gaga", "dataset=tolokers", "model=gaga", "tracker=none", "seed=3", "ARGS=--cfg job")
    assert shown.returncode == 0, shown.stderr
    config = yaml.safe_load(shown.stdout.split("\n", 1)[1])  # after the "# gaga / tolokers / gaga" line
    assert config["tracker"]["name"] == "none" and config["seed"] == 3
    refused = make("replicate-pshgcn", "foo=1")
    assert refused.returncode == 2
    one_error_line(refused.stderr, "unknown config key 'foo'")


# --- 5, 6, 7: a run's terminal: one line per run, the verdict last, Ctrl-C one line ------------------------

class Stops(Toy):
    """The toy paper, stopped at one seed by `stop` (Ctrl-C, or memory running out)."""

    def __init__(self, paper: Path, stop_at: int | None = None, stop: BaseException | None = None) -> None:
        super().__init__(paper)
        self.stop_at, self.stop = stop_at, stop

    def train(self, run, model, data, seed, log):
        if seed == self.stop_at:
            raise self.stop
        return super().train(run, model, data, seed, log)


@pytest.fixture
def toy(tmp_path, monkeypatch, paper_file):  # noqa: F811
    """replicate.main on a toy paper, results/ redirected to tmp_path/committed, pages printing a lot."""
    monkeypatch.setattr(destination, "COMMITTED", tmp_path / "committed")
    monkeypatch.setattr(replicate.report_all, "main", lambda argv: print("a page line\n" * 50))
    monkeypatch.chdir(tmp_path)

    def use(**stop):
        monkeypatch.setattr(replicate.replications, "get", lambda paper: Stops(paper_file, **stop))
    return use


ARGV = ["pshgcn", "dataset=dblp", "model=pshgcn", "tracker=none"]


def test_a_run_names_its_config_in_one_line_and_ends_with_its_verdict(toy, tmp_path, capsys):
    toy()
    assert replicate.main(ARGV) == 0
    out = capsys.readouterr().out
    assert "=== pshgcn / dblp / pshgcn: scale=full, seeds 1-5 (5), tracker=none, device=cpu ===" in out
    assert "  name: pshgcn" not in out and "lr:" not in out  # no config dump (--cfg job shows it)
    record = json.loads((tmp_path / "committed" / "pshgcn" / "dblp" / "pshgcn.json").read_text())
    verdict = format_rows(record)
    assert out.rstrip().endswith(verdict) and "| " in verdict  # after the pages' output


def test_ctrl_c_keeps_the_finished_seeds_and_says_how_to_resume(toy, tmp_path, capsys):
    toy(stop_at=3, stop=KeyboardInterrupt())
    assert replicate.main(ARGV) == 130
    partial = Path("committed/pshgcn/dblp/pshgcn.partial.json")
    assert capsys.readouterr().err.strip().splitlines() == [
        f"interrupted: seeds 1-2 of 5 kept in {partial}; rerun the same command to resume"]
    assert [r["seed"] for r in json.loads(partial.read_text())["runs"]] == [1, 2]
    toy()
    assert replicate.main(ARGV) == 0 and not partial.exists()  # the same command resumes and finishes
    assert "seed 1: resumed" in capsys.readouterr().out


def test_interrupted_before_any_seed_says_nothing_was_kept(tmp_path):
    assert interrupted(None, 0) == "interrupted before any run started: nothing was written"
    assert interrupted(tmp_path / "none.partial.json", 5).startswith("interrupted before its first seed finished")


def _interrupt_after_first_seed(command: list[str], cwd: Path) -> tuple[int, str]:
    """Start `command` in its own process group, Ctrl-C it (SIGINT to the group, as a terminal does) once seed 1 is
    written, return its exit status and stderr."""
    # SIGINT as a terminal leaves it: a test run started in the background (`cmd &`) inherits it ignored, and an
    # ignored signal stays ignored across exec, so the run would never see the Ctrl-C.
    proc = subprocess.Popen(command, cwd=cwd, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        for line in proc.stdout:
            if "seed 1:" in line:
                time.sleep(0.2)  # inside a later seed
                os.killpg(proc.pid, signal.SIGINT)
                break
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, err


# Tolokers has 10 official splits (seeds 0-9). At smoke size a seed took ~0.1 s, so on a loaded CI machine the run
# could end (or reach an invalid seed) before the signal came: 60 epochs without early stopping make each ~1.3 s.
SEEDS = 10
SMOKE = ["dataset=tolokers", "scale=smoke", "tracker=none", f"scale.seeds=[{','.join(map(str, range(SEEDS)))}]",
         "scale.max_epochs=60", "scale.patience=1000"]


def kept_line(err: str, partial: str) -> list[int]:
    """The seeds the one line says are kept (the run may have finished more than seed 1 before the signal came)."""
    match = re.fullmatch(rf"interrupted: seeds? (\d+)(?:-(\d+))? of {SEEDS} kept in {re.escape(partial)}; "
                         r"rerun the same command to resume", err.strip())
    assert match, err
    return list(range(int(match[1]), int(match[2] or match[1]) + 1))


@needs_tolokers
@pytest.mark.slow
def test_ctrl_c_on_a_hand_run_is_one_line_exit_130(tmp_path):
    out = tmp_path / "out"
    code, err = _interrupt_after_first_seed([sys.executable, "-m", "replications", "paper=gaga", "model=gaga_mlp",
                                             *SMOKE, f"paths.results_dir={out}"], tmp_path)
    partial = out / "gaga" / "tolokers" / "mlp.partial.json"
    assert code == 130
    assert kept_line(err, str(partial.relative_to(tmp_path))) == [r["seed"] for r in json.loads(partial.read_text())["runs"]]


@needs_tolokers
@pytest.mark.slow
def test_ctrl_c_through_make_is_one_line_exit_130(tmp_path):
    out = tmp_path / "out"
    command = ["make", "-s", "--no-print-directory", "-C", str(ROOT), "-o", ".venv/.installed", f"PY={sys.executable}",
               "replicate-gaga", "model=mlp", *SMOKE, f"paths.results_dir={out}"]
    code, err = _interrupt_after_first_seed(command, tmp_path)
    assert code == -signal.SIGINT, err  # make itself stops on the interrupt, adding no line: a shell shows 130
    partial = out / "gaga" / "tolokers" / "mlp.partial.json"
    assert kept_line(err, str(partial)) == [r["seed"] for r in json.loads(partial.read_text())["runs"]]


# --- 8: a batch larger than the data, or than memory ------------------------------------------------------

def test_evomoe_batch_larger_than_the_training_set_is_a_config_error():
    cfg = compose_cfg("paper=evomoe", "dataset=wikitext2", "model=evomoe_dense", "scale=smoke", "tracker=none",
                      "paper.protocol.batch_size=1000")
    train = torch.zeros(6500, dtype=torch.long)  # 6500 // 65 = 100 streams of seq_len + 1 tokens at most
    with pytest.raises(ConfigError, match=r"batch_size=1000 is larger than the training set allows: 6500 tokens make "
                                          r"at most 100 streams .* give paper.protocol.batch_size=100 or less"):
        fit(cfg, None, train, train, 1, lambda *a: None)  # refused before the model is touched


def test_out_of_memory_names_a_smaller_batch(toy, tmp_path, capsys):
    cfg = compose_cfg("paper=evomoe", "dataset=wikitext2", "model=evomoe_dense", "tracker=none")
    line = out_of_memory(cfg, tmp_path / "none.partial.json")
    assert "out of memory running evomoe/wikitext2/dense on device=cpu: give a smaller batch, e.g. " \
           "paper.protocol.batch_size=8 (now 16), or scale=smoke" == line
    toy(stop_at=2, stop=torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert replicate.main(ARGV) == 2
    one_error_line(capsys.readouterr().err, "out of memory running pshgcn/dblp/pshgcn on device=cpu")


def test_ctrl_c_closes_the_open_tracker_run_quietly(toy, monkeypatch):
    """A W&B run left open at Ctrl-C would have wandb's exit hook print after the one 'interrupted' line."""
    from shared import runner
    from shared.tracking import Tracker

    calls: list[str] = []

    class Recorder(Tracker):
        def start(self, cfg, seed):
            calls.append(f"start {seed}")

        def abort(self):
            calls.append("abort")

    monkeypatch.setattr(runner, "make_tracker", lambda cfg, git=None: Recorder())
    toy(stop_at=2, stop=KeyboardInterrupt())
    assert replicate.main(ARGV) == 130
    assert calls == ["start 1", "start 2", "abort"]


@pytest.mark.parametrize("paper, model", [("ta_moe", "ta_moe/wikitext2"), ("flexmoe", "flexmoe/wikitext2")])
def test_every_moe_paper_refuses_a_batch_larger_than_the_training_set(paper, model):
    """The check lives in the shared loop (replications.moe.lmtrain.fit_loop): TA-MoE and FlexMoE get it too."""
    from replications.moe.lmtrain import fit_loop

    cfg = compose_cfg(f"paper={paper}", "dataset=wikitext2", f"model={model}", "scale=smoke", "tracker=none",
                      "paper.protocol.batch_size=100000")
    train = torch.zeros(6500, dtype=torch.long)
    with pytest.raises(ConfigError, match=r"batch_size=100000 is larger than the training set allows"):
        fit_loop(cfg, None, train, train, lambda *a: None)  # refused before the model is touched


@needs_tolokers
def test_a_seed_past_tolokers_splits_is_refused_before_any_seed_trains(tmp_path):
    """Seeds 8-11 on Tolokers' 10 splits trained 8 and 9, then raised a traceback at 10; now one line, nothing run."""
    done = subprocess.run([sys.executable, "-m", "replications", "paper=gaga", "model=gaga_mlp", "dataset=tolokers",
                           "scale=smoke", "tracker=none", "scale.seeds=[8,9,10,11]", f"paths.results_dir={tmp_path}/out"],
                          cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    one_error_line(done.stderr, "tolokers has 10 official splits, seeds 0-9; seed(s) [10, 11] name none")
    assert "seed 8:" not in done.stdout and not list((tmp_path / "out").rglob("*.json"))
