"""The command line as the tools people know: a `replications` console script with Hydra's shell completion,
`--cfg job` printing the config that runs, and a run's log beside its result (a refused run leaves nothing)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hydra.types import RunMode
from omegaconf import OmegaConf

from shared.compose import finish_config
from shared.runlog import RunLog
from tests.conftest import compose_cfg

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(sys.executable).parent / "replications"  # installed by pip install -e . (pyproject [project.scripts])
MIRROR = Path(os.environ.get("REPLICATIONS_MIRROR") or ROOT.parent / "shared" / "data")
needs_script = pytest.mark.skipif(not SCRIPT.exists(), reason=f"{SCRIPT} is not installed: pip install -e . --no-deps")
needs_tolokers = pytest.mark.skipif(not (MIRROR / "tolokers" / "tolokers.npz").exists(),
                                    reason=f"{MIRROR}/tolokers/tolokers.npz is absent: set REPLICATIONS_MIRROR")


def app(cwd: Path, *args: str, command: tuple[str, ...] = (sys.executable, "-m", "replications"),
        **env: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WANDB_MODE": "disabled", "OMP_NUM_THREADS": "1", **env}
    return subprocess.run([*command, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@needs_script
def test_console_script_completes_overrides_in_bash(tmp_path):
    # What bash's completion function (printed by -sc install=bash) asks the app: COMP_LINE is the line so far
    query = app(tmp_path, "-sc", "query=bash", command=(str(SCRIPT),), COMP_LINE="replications paper=ps")
    assert query.returncode == 0, query.stderr
    assert "paper=pshgcn" in query.stdout.split()
    install = app(tmp_path, "-sc", "install=bash", command=(str(SCRIPT),))
    assert install.returncode == 0 and install.stdout.rstrip().endswith("-F hydra_bash_completion replications")
    assert list(tmp_path.iterdir()) == []  # asking writes nothing


def test_cfg_job_shows_the_smoke_block_applied_and_the_command_line_winning(tmp_path):
    overrides = ["paper=pshgcn", "dataset=acm", "scale=smoke", "scale.patience=5", "tracker=none"]
    shown = app(tmp_path, *overrides, "--cfg", "job")
    assert shown.returncode == 0, shown.stderr
    printed = yaml.safe_load(shown.stdout)
    assert printed["scale"]["max_epochs"] == 3 and printed["model"]["K"] == 2  # conf/paper/pshgcn.yaml smoke:, not 30 / 5
    assert printed["scale"]["patience"] == 5  # the command line wins over the block
    run = compose_cfg(*overrides)  # what python -m replications runs: composed, then finished as its main() does
    finish_config(run, overrides, RunMode.RUN)
    assert printed == OmegaConf.to_container(run)
    assert list(tmp_path.iterdir()) == []


def test_cfg_job_shows_the_hand_runs_own_folder(tmp_path):
    shown = app(tmp_path, "paper=pshgcn", "dataset=acm", "model.lr=0.1", "seed=2", "tracker=none", "--cfg", "job")
    assert shown.returncode == 0, shown.stderr
    assert yaml.safe_load(shown.stdout)["paths"]["results_dir"] == "outputs/results/model.lr=0.1,seed=2"


@needs_tolokers
@pytest.mark.slow
def test_a_run_prints_the_config_it_runs_and_keeps_its_log_beside_its_result(tmp_path):
    out = tmp_path / "out"
    args = ["paper=gaga", "dataset=tolokers", "model=gaga_mlp", "scale=smoke", "tracker=none", f"paths.results_dir={out}"]
    shown = app(tmp_path, *args, "--cfg", "job", "--resolve")
    assert shown.returncode == 0, shown.stderr
    done = app(tmp_path, *args)
    assert done.returncode == 0, done.stderr
    result = out / "gaga" / "tolokers" / "mlp.json"
    recorded = json.loads(result.read_text())["config"]
    printed = yaml.safe_load(shown.stdout)
    smoke = OmegaConf.load(ROOT / "conf" / "paper" / "gaga.yaml").smoke
    assert printed["scale"]["max_epochs"] == smoke["scale.max_epochs"] != 30
    assert {k: v for k, v in printed.items() if k != "paths"} == {k: v for k, v in recorded.items() if k != "paths"}
    log = result.with_suffix(".log").read_text()
    assert "python -m replications paper=gaga" in log.splitlines()[0]
    assert f"wrote {result}" in log and "seed 1:" in log
    assert sorted(p.name for p in result.parent.iterdir()) == ["mlp.json", "mlp.log"]
    assert list(tmp_path.iterdir()) == [out]  # nothing of Hydra's in the working directory


def test_a_run_refused_while_loading_its_data_leaves_no_log(tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "tolokers").mkdir(parents=True)
    (mirror / "tolokers" / "tolokers.npz").write_bytes(b"not the official file")
    work = tmp_path / "work"
    work.mkdir()
    proc = app(work, "paper=gaga", "dataset=tolokers", "model=gaga_mlp", "tracker=none", "model.lr=0.1",
               REPLICATIONS_MIRROR=str(mirror), REPLICATIONS_CACHE=str(tmp_path / "cache"))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "hand run: results go to" in proc.stdout  # it got as far as running: the folder was chosen
    assert list(work.iterdir()) == []  # no outputs/results/model.lr=0.1/..., no log


def test_run_log_is_written_only_once_the_run_writes_its_result(tmp_path, capsys):
    result = tmp_path / "gaga" / "tolokers" / "mlp.json"
    with RunLog(result):
        print("refused before its first seed")
    assert not (tmp_path / "gaga").exists() and "log:" not in capsys.readouterr().out
    with RunLog(result):
        print("seed 1 done")
        result.with_suffix(".partial.json").parent.mkdir(parents=True)
        result.with_suffix(".partial.json").write_text("{}")
        logging.getLogger("replications.test").warning("a logging record")
        sys.stderr.write("\rprogress 50%")  # a bar's redraw: not in the log
        print("seed 2 done")
    log = result.with_suffix(".log").read_text()
    assert "seed 1 done" in log and "seed 2 done" in log and "a logging record" in log and "progress" not in log
    assert f"log: {result.with_suffix('.log')}" in capsys.readouterr().out
