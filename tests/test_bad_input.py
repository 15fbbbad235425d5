"""Every bad input a newcomer might type: a one-line error saying what and how to fix, exit code 2, nothing written.

Most cases go through ``replications.replicate.main`` in-process (the same compose, check and validation
as ``make replicate-<paper>``, without a process start each); the Hydra entry point has its own cases.
"Nothing written" means: no result, partial or details file under the run's results_dir, and an empty cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

import replications
from replications import replicate, verify
from shared.paths import REPO_ROOT
from tests.conftest import compose_cfg
from tests.test_runner import paper_file  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[1]
NO_CUDA = not torch.cuda.is_available()


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


def refused(capsys, argv: list[str], out: Path, cache: Path, tracker: str = "none") -> str:
    """Run replicate with `argv`, assert exit 2, one stderr line, nothing written; return that line."""
    code = replicate.main([*argv, f"tracker={tracker}", f"paths.results_dir={out}"])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert _files(out) == [] and _files(cache) == []
    return err


# --- config values: refused before any data is read --------------------------------------------------

@pytest.mark.parametrize(("override", "message"), [
    ("seed=abc", "seed='abc' is invalid: it must be an integer in [0, 4294967295]"),
    ("seed=99999999999", "seed=99999999999 is invalid"),  # numpy would refuse it after the data loaded
    ("scale.seeds=[1,1,1]", "scale.seeds repeats seed(s) [1]"),  # n = 3 with a zero-width interval otherwise
    ("seed=-1", "seed=-1 is invalid"),
    ("seed=1.5", "seed=1.5 is invalid"),
    ("model.lr=-0.1", "model.lr=-0.1 is invalid: it must be a number > 0"),
    ("model.lr=0", "model.lr=0 is invalid"),
    ("model.lr=fast", "model.lr='fast' is invalid"),
    ("model.lr=inf", "model.lr=inf is invalid: it must be a number > 0"),  # passed '> 0', then NaN losses
    ("model.wd=nan", "model.wd=nan is invalid"),
    ("scale.max_epochs=0", "scale.max_epochs=0 is invalid: it must be a positive integer"),
    ("scale.max_epochs=-3", "scale.max_epochs=-3 is invalid"),
    ("scale.patience=0", "scale.patience=0 is invalid"),
    ("model.hidden=0", "model.hidden=0 is invalid: it must be a positive integer"),
    ("model.K=2.5", "model.K=2.5 is invalid"),
    # a whole float passed the integer check, then range(2.0) failed after the data loaded (gaga/train.py)
    ("scale.max_epochs=2.0", "scale.max_epochs=2.0 is invalid: it must be a positive integer such as 2, not a float"),
    ("model.hidden=64.0", "model.hidden=64.0 is invalid: it must be a positive integer such as 64"),
    ("paper.protocol.max_epochs=1e3", "paper.protocol.max_epochs=1000.0 is invalid"),
    ("model.dropout=1.5", "model.dropout=1.5 is invalid: it must be a number in [0, 1)"),
    ("model.wd=-1", "model.wd=-1 is invalid: it must be a number >= 0"),
    ("scale.seeds=[]", "scale.seeds=[] is invalid: it must be a non-empty list of seeds"),
    ("scale.seeds=[1,x]", "scale.seeds holds 'x'"),
    ("paper.protocol.max_epochs=0", "paper.protocol.max_epochs=0 is invalid"),
    ("device=tpu", "device='tpu' is not a device name; this machine has: cpu"),
])
def test_out_of_range_values_are_refused_before_any_work(capsys, tmp_path, fresh_cache, override, message):
    err = refused(capsys, ["pshgcn", "dataset=dblp", "model=pshgcn", override], tmp_path / "out", fresh_cache)
    assert message in err


@pytest.mark.skipif(not NO_CUDA, reason="this machine has CUDA")
def test_cuda_on_a_machine_without_it_names_the_devices_there(capsys, tmp_path, fresh_cache):
    err = refused(capsys, ["gaga", "dataset=tolokers", "model=gaga", "device=cuda"], tmp_path / "out", fresh_cache)
    assert "device=cuda is not available on this machine" in err and "this machine has: cpu" in err


def test_a_whole_float_for_a_count_is_refused_in_every_paper(capsys, tmp_path, fresh_cache):
    err = refused(capsys, ["gaga", "dataset=tolokers", "model=gaga", "scale=smoke", "scale.max_epochs=2.0"],
                  tmp_path / "out", fresh_cache)
    assert "scale.max_epochs=2.0 is invalid: it must be a positive integer such as 2, not a float" in err
    err = refused(capsys, ["evomoe", "paper.protocol.warmup_steps=3.0"], tmp_path / "out", fresh_cache)
    assert "paper.protocol.warmup_steps=3.0 is invalid: it must be an integer >= 0" in err


def test_a_scale_override_of_zero_is_a_value_not_unset(capsys, tmp_path, fresh_cache):
    # `x or default` once ran the full 1000-epoch protocol for max_epochs=0; now 0 is checked and refused.
    err = refused(capsys, ["gaga", "dataset=tolokers", "model=gaga", "scale.max_epochs=0"], tmp_path / "out",
                  fresh_cache)
    assert "scale.max_epochs=0 is invalid" in err
    from shared.config_check import given

    assert given(0, 1000) == 0 and given(None, 1000) == 1000


def test_every_committed_config_passes_the_check():
    from omegaconf import OmegaConf

    from shared.config_check import validate, walk

    for path in sorted((ROOT / "conf" / "model").rglob("*.yaml")):  # every model file, planned or not
        walk(OmegaConf.load(path), "model")
    for path in sorted((ROOT / "conf" / "paper").glob("*.yaml")):
        walk(OmegaConf.load(path).protocol, "paper.protocol")
    for paper in ("pshgcn", "gaga", "rep", "evomoe", "ppocrv3"):  # composed, with the smoke blocks applied
        for _, _, cfg in replicate.plan_configs(paper, ["scale=smoke"]):
            validate(cfg)


# --- names ---------------------------------------------------------------------------------------------

def test_model_name_as_the_results_use_it_is_accepted():
    (_, model, cfg), = replicate.plan_configs("gaga", ["dataset=tolokers", "model=mlp"])
    assert cfg.model.name == "mlp" and model == "mlp"


@pytest.mark.parametrize(("paper", "dataset"), [
    (p, d) for p in ("evomoe", "flexmoe", "gaga", "moesys", "ppstructurev2", "rep", "ta_moe", "hetumoe")
    for d in OmegaConf.load(REPO_ROOT / "conf" / "paper" / f"{p}.yaml").replicate.datasets])
def test_every_planned_model_is_accepted_by_its_result_name(paper, dataset):
    """One model, one name: the name a result file and the page use is a valid model= value (flexmoe's own
    config runs switch_e8, moesys's ring_memory, ppstructurev2's slanet / picodet_cdla)."""
    plan = OmegaConf.load(REPO_ROOT / "conf" / "paper" / f"{paper}.yaml").replicate
    for planned in plan.models:
        choice = replicate.model_choice(paper, list(plan.models), planned, dataset)
        name = str(OmegaConf.load(REPO_ROOT / "conf" / "model" / f"{choice}.yaml").name)
        assert replicate.model_choice(paper, list(plan.models), name, dataset) == choice, (paper, planned, name)


def test_unknown_model_lists_the_accepted_names(capsys, tmp_path, fresh_cache):
    err = refused(capsys, ["gaga", "dataset=tolokers", "model=mpl"], tmp_path / "out", fresh_cache)
    assert "has no model 'mpl'" in err and "accepted names:" in err
    assert all(name in err for name in ("mlp", "gaga_mlp", "bwgnn", "graphsage"))


def test_unknown_paper_lists_the_papers(capsys):
    assert replicate.main(["pshgnc"]) == 2
    err = capsys.readouterr().err
    assert "unknown paper 'pshgnc'" in err and "pshgcn" in err


def test_unknown_top_level_key_is_named(capsys, tmp_path, fresh_cache):
    err = refused(capsys, ["pshgcn", "dataset=dblp", "model=pshgcn", "+modle.lr=0.1"], tmp_path / "out", fresh_cache)
    assert "modle" in err


@pytest.mark.parametrize(("paper", "override", "message"), [
    ("evomoe", "+model.lr=0.5", "'lr' lives at paper.protocol.lr"),  # was accepted and silently ignored
    ("pshgcn", "+model.hiden=64", "did you mean model.hidden=...?"),
])
def test_added_key_the_paper_never_reads_is_refused(capsys, tmp_path, fresh_cache, paper, override, message):
    err = refused(capsys, [paper, override], tmp_path / "out", fresh_cache)
    assert message in err and "never reads" in err


# --- where results go -------------------------------------------------------------------------------------

def _unwritable(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        folder = tmp_path / "readonly"
        folder.mkdir()
        folder.chmod(0o500)
        return folder / "out"
    try:  # root writes anywhere chmod allows; /sys refuses even root
        os.close(tempfile.mkstemp(dir="/sys")[0])
    except OSError:
        return Path("/sys/replications-test/out")
    pytest.skip("running as root with no read-only folder to try")


def test_unwritable_results_folder_is_refused_before_training(capsys, tmp_path, fresh_cache):
    out = _unwritable(tmp_path)
    code = replicate.main(["gaga", "dataset=tolokers", "model=gaga", "tracker=none", f"paths.results_dir={out}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith(f"error: cannot write results under {out}") and "paths.results_dir=" in err
    assert _files(fresh_cache) == []  # refused before the data was even fetched


def test_results_folder_under_a_file_is_refused(capsys, tmp_path, fresh_cache):
    (tmp_path / "afile").write_text("x")
    err = refused(capsys, ["gaga", "dataset=tolokers", "model=gaga", "scale=smoke"], tmp_path / "afile" / "out",
                  fresh_cache)
    assert "is a file, not a folder" in err


def test_writable_probe_leaves_nothing(tmp_path):
    from shared.writable import ensure_writable

    ensure_writable(tmp_path / "a" / "b")
    assert list(tmp_path.iterdir()) == []  # no probe file, no folders made


# --- the data mirror and cache: refused before any work; a corrupt file named in one line ------------------

def test_relative_mirror_that_is_not_there_from_the_working_directory(capsys, tmp_path, fresh_cache, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REPLICATIONS_MIRROR", "../shared/data")  # right from the checkout, wrong from elsewhere
    err = refused(capsys, ["gaga", "dataset=tolokers", "model=gaga"], tmp_path / "out", fresh_cache)
    assert "REPLICATIONS_MIRROR=../shared/data is a relative path" in err
    assert f"from the working directory {tmp_path} it is {(tmp_path / '../shared/data').resolve()}" in err
    assert "REPLICATIONS_MIRROR=$(realpath ../shared/data)" in err


def test_mirror_that_is_a_file(capsys, tmp_path, fresh_cache, monkeypatch):
    (tmp_path / "mirror").write_text("x")
    monkeypatch.setenv("REPLICATIONS_MIRROR", str(tmp_path / "mirror"))
    err = refused(capsys, ["gaga", "dataset=tolokers", "model=gaga"], tmp_path / "out", fresh_cache)
    assert f"REPLICATIONS_MIRROR={tmp_path / 'mirror'} is a file, not a folder; set it to the data mirror's folder" in err


def _corrupt_mirror(tmp_path: Path) -> Path:
    mirror = tmp_path / "mirror"
    (mirror / "tolokers").mkdir(parents=True)
    (mirror / "tolokers" / "tolokers.npz").write_bytes(b"not the official file")
    return mirror


def test_corrupt_mirror_file_is_one_line(capsys, tmp_path, fresh_cache, monkeypatch):
    # DataError's message spans lines (what, expected, actual, fix): printed as one
    monkeypatch.setenv("REPLICATIONS_MIRROR", str(_corrupt_mirror(tmp_path)))
    err = refused(capsys, ["gaga", "dataset=tolokers", "model=gaga", "scale=smoke"], tmp_path / "out", fresh_cache)
    assert "tolokers.npz" in err and "Fix:" in err


def test_cache_that_is_a_file_names_the_variable(capsys, tmp_path, fresh_cache, monkeypatch):
    (tmp_path / "cachefile").write_text("x")
    monkeypatch.setenv("REPLICATIONS_CACHE", str(tmp_path / "cachefile"))
    err = refused(capsys, ["gaga", "dataset=tolokers", "model=gaga"], tmp_path / "out", fresh_cache)
    assert f"cannot write the data cache REPLICATIONS_CACHE={tmp_path / 'cachefile'}" in err
    assert "is a file, not a folder; set REPLICATIONS_CACHE=<a writable folder>" in err


def test_unwritable_cache_names_the_variable(capsys, tmp_path, fresh_cache, monkeypatch):
    cache = _unwritable(tmp_path)
    monkeypatch.setenv("REPLICATIONS_CACHE", str(cache))
    err = refused(capsys, ["gaga", "dataset=tolokers", "model=gaga"], tmp_path / "out", fresh_cache)
    assert f"cannot write the data cache REPLICATIONS_CACHE={cache}" in err and "set REPLICATIONS_CACHE=" in err


def test_verify_with_an_unwritable_cache(capsys, tmp_path, monkeypatch):
    (tmp_path / "cachefile").write_text("x")
    monkeypatch.setenv("REPLICATIONS_CACHE", str(tmp_path / "cachefile"))
    assert "cannot write the data cache REPLICATIONS_CACHE=" in _verify(capsys, str(_record(tmp_path)))


# --- W&B (tracker=wandb, the default): a mode or key that would fail at the first seed, refused up front ------

@pytest.fixture
def no_wandb_login(tmp_path, monkeypatch):
    """No key in the environment and no `wandb login` (an empty netrc): what a fresh machine has."""
    for name in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "netrc").write_text("")
    monkeypatch.setenv("NETRC", str(tmp_path / "netrc"))


@pytest.mark.parametrize(("env", "message"), [
    ({"WANDB_MODE": "onlnie"}, "WANDB_MODE='onlnie' is not a W&B mode; valid: offline, online, disabled"),
    ({"WANDB_MODE": "online"}, "WANDB_MODE=online needs a W&B API key and network, and there is no key: set "
                               "WANDB_API_KEY (https://wandb.ai/authorize) or run `wandb login`, or run offline"),
    ({"WANDB_API_KEY": "abc123"}, "WANDB_API_KEY is malformed: it has 6 characters, a W&B key has 40 or more"),
    ({"WANDB_MODE": "online", "WANDB_API_KEY": f"'{'a' * 40}'"},
     "WANDB_API_KEY is malformed: it may hold only letters, digits and underscores"),
])
def test_wandb_mode_or_key_that_would_fail_is_refused_up_front(capsys, tmp_path, fresh_cache, monkeypatch,
                                                                no_wandb_login, env, message):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    err = refused(capsys, ["gaga", "dataset=tolokers", "model=gaga"], tmp_path / "out", fresh_cache, tracker="wandb")
    assert message in err and "tracker=none" in err
    assert env.get("WANDB_API_KEY", "never printed") not in err  # a key is a secret: described, never echoed


def test_wandb_tracker_mode_in_the_config_is_named(capsys, tmp_path, fresh_cache, no_wandb_login):
    err = refused(capsys, ["gaga", "dataset=tolokers", "model=gaga", "tracker.mode=ofline"], tmp_path / "out",
                  fresh_cache, tracker="wandb")
    assert "tracker.mode='ofline' is not a W&B mode" in err


def test_wandb_settings_do_not_matter_without_wandb(monkeypatch, no_wandb_login):
    from shared.config_check import validate

    monkeypatch.setenv("WANDB_MODE", "onlnie")
    (_, _, cfg), = replicate.plan_configs("gaga", ["dataset=tolokers", "model=gaga", "tracker=none"])
    validate(cfg)  # tracker=none never reads them


# --- the Hydra entry point ----------------------------------------------------------------------------

def _hand_run(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WANDB_MODE": "disabled", **env}
    return subprocess.run([sys.executable, "-m", "replications", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


def _one_line(proc: subprocess.CompletedProcess, message: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], proc.stderr


def test_hand_run_relative_mirror_from_another_folder_is_one_line(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = _hand_run(elsewhere, "paper=gaga", "dataset=tolokers", "model=gaga/tolokers", "tracker=none", "scale=smoke",
                     f"paths.results_dir={tmp_path / 'out'}", REPLICATIONS_MIRROR="../shared/data",
                     REPLICATIONS_CACHE=str(tmp_path / "cache"))
    _one_line(proc, "REPLICATIONS_MIRROR=../shared/data is a relative path")  # was a 96-line traceback
    assert list(elsewhere.iterdir()) == [] and _files(tmp_path / "out") == [] and _files(tmp_path / "cache") == []


def test_hand_run_corrupt_mirror_file_is_one_line(tmp_path):
    proc = _hand_run(tmp_path, "paper=gaga", "dataset=tolokers", "model=gaga/tolokers", "tracker=none", "scale=smoke",
                     f"paths.results_dir={tmp_path / 'out'}", REPLICATIONS_MIRROR=str(_corrupt_mirror(tmp_path)),
                     REPLICATIONS_CACHE=str(tmp_path / "cache"))
    _one_line(proc, "tolokers.npz")
    assert "Traceback" not in proc.stderr and _files(tmp_path / "out") == []


def test_hand_run_bad_value_is_one_line_exit_2(tmp_path):
    override, message = "seed=abc", "seed='abc' is invalid"  # one process start: ~30 s on a loaded machine
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WANDB_MODE": "disabled"}
    proc = subprocess.run([sys.executable, "-m", "replications", "paper=gaga", "dataset=tolokers", "model=gaga/tolokers",
                           "tracker=none", override, f"paths.results_dir={tmp_path / 'out'}"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and _files(tmp_path / "out") == []


def test_hand_run_refused_inside_results_leaves_nothing_there(tmp_path):
    # Hydra made outputs/<date>/<time>/ (.hydra/, a log) in the working directory before the run was refused:
    # from inside results/, inside the committed folder. A single run now writes nothing of Hydra's own.
    results = ROOT / "results"
    before = sorted(p.name for p in results.iterdir())
    try:
        proc = _hand_run(results, "paper=gaga", "dataset=tolokers", "model=gaga/tolokers", "tracker=none",
                         "paths.results_dir=x")
        _one_line(proc, "is inside the committed")
        assert sorted(p.name for p in results.iterdir()) == before
    finally:
        if "outputs" not in before:
            import shutil

            shutil.rmtree(results / "outputs", ignore_errors=True)


def test_sweep_config_without_multirun_is_refused(tmp_path):
    # conf/sweep/* set paths.results_dir to Hydra's job folder: a single run has none (it would be the working directory)
    proc = _hand_run(tmp_path, "paper=pshgcn", "+sweep=pshgcn", "tracker=none")
    _one_line(proc, "add --multirun (make sweep-<paper>)")
    assert list(tmp_path.iterdir()) == []


# --- make verify ---------------------------------------------------------------------------------------

def _verify(capsys, *argv: str) -> str:
    code = verify.main(list(argv))
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("error: "), err
    return err


def _record(tmp_path: Path, **changes) -> Path:
    path = tmp_path / "gaga.json"
    path.write_text(json.dumps({"paper": "gaga", "dataset": "tolokers", "model": "gaga", "complete": True,
                                "runs": [{"seed": 0, "metrics": {}}], "config": {}} | changes))
    return path


def test_verify_seeds_not_integers(capsys, tmp_path):
    assert "--seeds 'abc' is invalid: give comma-separated integers" in _verify(capsys, str(_record(tmp_path)), "--seeds", "abc")


def test_verify_negative_rtol(capsys, tmp_path):
    assert "--rtol -1.0 is invalid" in _verify(capsys, str(_record(tmp_path)), "--rtol", "-1")


def test_verify_on_a_folder(capsys, tmp_path):
    assert "is a folder, not a result file" in _verify(capsys, str(tmp_path))


def test_verify_on_a_json_that_is_not_a_result(capsys, tmp_path):
    (tmp_path / "x.json").write_text('{"a": 1}')
    assert "is not a result file (no paper, dataset, model, runs)" in _verify(capsys, str(tmp_path / "x.json"))


def test_verify_on_a_corrupt_file(capsys, tmp_path):
    (tmp_path / "x.json").write_text('{"paper": "ga')
    assert "is not valid JSON" in _verify(capsys, str(tmp_path / "x.json"))


def test_verify_on_a_partial_file(capsys, tmp_path):
    assert "is a partial file" in _verify(capsys, str(_record(tmp_path, complete=False)))


def test_verify_on_a_missing_file(capsys, tmp_path):
    assert "no result file" in _verify(capsys, str(tmp_path / "nope.json"))


def test_verify_seed_not_in_the_record(capsys, tmp_path):
    assert "has no seed [7]" in _verify(capsys, str(_record(tmp_path)), "--seeds", "7")


def test_verify_result_of_an_unknown_paper(capsys, tmp_path):
    assert "unknown paper 'nopaper'" in _verify(capsys, str(_record(tmp_path, paper="nopaper")))


# --- the report ------------------------------------------------------------------------------------------

def test_report_names_a_corrupt_result_file_and_builds_the_rest(tmp_path):
    from shared.report import write_report

    folder = tmp_path / "results" / "gaga" / "tolokers"
    folder.mkdir(parents=True)
    (folder / "gaga.json").write_text('{"paper": "gaga", "runs": [')
    report = write_report(tmp_path / "results", ROOT / "replications", plots=False)
    assert len(report.unreadable) == 1 and "gaga/tolokers/gaga.json" in report.unreadable[0]
    assert "gaga/tolokers/gaga.json" in (tmp_path / "results" / "README.md").read_text()


# --- tesseract missing ---------------------------------------------------------------------------------

def test_missing_tesseract_is_a_config_error(monkeypatch):
    from replications.ppocrv3 import engines
    from shared.config_check import ConfigError

    monkeypatch.setattr(engines.shutil, "which", lambda _: None)
    with pytest.raises(ConfigError, match="apt-get install -y tesseract-ocr"):
        engines.TesseractEngine(3, "eng", 1)


# --- smoke shrinking ----------------------------------------------------------------------------------------

def test_smoke_block_shrinks_only_existing_keys_and_the_command_line_wins():
    from shared.smoke import apply_smoke

    cfg = compose_cfg("paper=pshgcn", "dataset=acm", "scale=smoke", "scale.max_epochs=7")
    changed = apply_smoke(cfg, ["scale=smoke", "scale.max_epochs=7"])
    assert cfg.model.K == 2 and cfg.scale.max_epochs == 7 and "scale.max_epochs" not in changed
    rgcn = compose_cfg("paper=pshgcn", "dataset=acm", "model=rgcn", "scale=smoke")
    apply_smoke(rgcn)
    assert "K" not in rgcn.model and rgcn.model.hidden == 16
    full = compose_cfg("paper=pshgcn", "dataset=acm")
    assert apply_smoke(full) == [] and full.model.K == 5


# --- a corrupt partial file ---------------------------------------------------------------------------------

def test_corrupt_partial_file_is_ignored_with_a_note(tmp_path, capsys, paper_file):  # noqa: F811
    from shared.runner import partial_path, run
    from tests.test_runner import Toy, _cfg

    cfg = _cfg(tmp_path)
    partial_path(cfg).parent.mkdir(parents=True)
    partial_path(cfg).write_text('{"complete": false, "runs": [')  # cut off mid-write by a full disk
    record = run(cfg, Toy(paper_file))
    assert [r["seed"] for r in record["runs"]] == [1, 2, 3] and not partial_path(cfg).exists()
    assert "is not valid JSON; its seeds run again" in capsys.readouterr().out


# --- a full disk at the final write -------------------------------------------------------------------------

def test_full_disk_at_the_final_write_keeps_the_partial_file_and_says_so(tmp_path, paper_file, monkeypatch):  # noqa: F811
    import errno

    from shared import runner
    from shared.atomic import write_json_atomic
    from shared.destination import DestinationError
    from tests.test_runner import Toy, _cfg

    cfg = _cfg(tmp_path)

    def full_at_the_end(target, obj):
        if Path(target) == runner.result_path(cfg):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        write_json_atomic(target, obj)

    monkeypatch.setattr(runner, "write_json_atomic", full_at_the_end)
    with pytest.raises(DestinationError) as info:  # what every entry point prints as one line, exit 2
        runner.run(cfg, Toy(paper_file))
    message = str(info.value)
    assert "\n" not in message and f"cannot write {runner.result_path(cfg)}: No space left on device" in message
    assert f"no seed is lost: all 3 are in {runner.partial_path(cfg)}" in message and "run the same command again" in message
    saved = json.loads(runner.partial_path(cfg).read_text())  # valid, every seed, no result file beside it
    assert saved["complete"] is False and [r["seed"] for r in saved["runs"]] == [1, 2, 3]
    assert not runner.result_path(cfg).exists() and [p.name for p in runner.result_path(cfg).parent.iterdir()] == [
        runner.partial_path(cfg).name]
    monkeypatch.undo()  # space freed: the same command resumes every seed and writes the result
    record = runner.run(cfg, Toy(paper_file, fail_at_seed=1))  # a seed run again would fail
    assert record["complete"] and runner.result_path(cfg).exists() and not runner.partial_path(cfg).exists()


# --- make smoke dataset=... -----------------------------------------------------------------------------------

def _make_n(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-n", "smoke", *args], capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_smoke_with_a_dataset_runs_only_the_papers_that_have_it():
    # it ran every paper with dataset=acm and stopped at the first (evomoe) without it
    proc = _make_n("dataset=acm")
    assert proc.returncode == 0 and 'papers="pshgcn";' in proc.stdout and "dataset=acm" in proc.stdout, proc.stderr
    assert 'papers="gaga"' in _make_n("dataset=tolokers").stdout
    everything = _make_n().stdout
    assert all(p in everything for p in replications.available())


def test_smoke_with_a_dataset_no_paper_has_says_which_exist():
    proc = _make_n("dataset=acme")
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "no paper has dataset=acme; datasets: acm, " in lines[0] and "make smoke dataset=dblp" in lines[0]
    assert 'papers=""; test -n "$papers" || exit 2' in proc.stdout  # nothing runs, exit 2


def test_a_python_without_the_suite_says_to_use_the_venv(tmp_path):
    """`python3 -m replications` with a bare interpreter (no hydra/omegaconf/torch): one line, exit 2."""
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    out = subprocess.run([str(bare / "bin" / "python"), "-m", "replications", "paper=pshgcn"], cwd=REPO_ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "is not installed in this Python" in out.stderr and "make venv" in out.stderr
