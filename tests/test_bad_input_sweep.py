"""Sweeps and their ranking (issue 38): a diverged setting is never selected, failed, diverged, unreadable and
never-run jobs are listed under the ranking, a corrupt job file is named while the rest are ranked, and a bad grid
value is refused in one line before the first job starts (shared.sweep_grid, run by `make sweep-<paper>`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from shared import sweep_grid
from shared.sweep import jobs, main, markdown, rank

ROOT = Path(__file__).resolve().parents[1]


def _job(root: Path, name: str, overrides: list[str], val: float | None, test: float = 0.5,
         text: str | None = None) -> Path:
    """A job folder as a multirun job leaves it: .hydra/overrides.yaml and (val not None) its result record."""
    job = root / name
    (job / ".hydra").mkdir(parents=True)
    (job / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
    path = job / "p" / "d" / "m.json"
    path.parent.mkdir(parents=True)
    if val is None and text is None:
        path.with_suffix(".log").write_text("Traceback ...\n")  # a job that died: its log, no record
        return path
    seed = int(next(o.split("=")[1] for o in overrides if o.startswith("seed=")))
    record = {"complete": True, "config": {"paper": {"name": "p", "select_metric": "val_x"}}, "runs": [{"seed": seed}],
              "aggregate": {"val_x": {"mean": val}, "test_x": {"mean": test}}}
    path.write_text(json.dumps(record) if text is None else text)  # json writes a NaN as NaN, as the runner does
    return path


def _multirun_yaml(root: Path, params: dict[str, str], task: list[str]) -> None:
    """The sweep folder's multirun.yaml, as Hydra's basic sweeper saves it (only what shared.sweep reads)."""
    (root / "multirun.yaml").write_text(yaml.safe_dump({"hydra": {"sweeper": {"params": params, "max_batch_size": None},
                                                                  "overrides": {"task": task, "hydra": []}}}))


# --- case 1: a diverged setting (NaN validation metric) is never ranked, whatever the folder order ------------------

@pytest.mark.parametrize("nan_first", [True, False])
@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_diverged_setting_is_listed_never_ranked(tmp_path, nan_first, value):
    # Before: sorting a list holding NaN put the NaN setting wherever the folder order left it, often first.
    names = ["0", "1"] if nan_first else ["1", "0"]
    _job(tmp_path, names[0], ["lr=9", "seed=1"], value)
    _job(tmp_path, names[1], ["lr=0.1", "seed=1"], 0.6)
    ranking = rank(jobs(tmp_path))
    assert [r["setting"] for r in ranking.rows] == [{"lr": "0.1"}]
    assert [(j.name, j.problem) for j in ranking.unranked] == [(names[0], "diverged")]


def test_a_setting_with_one_diverged_seed_is_not_ranked_on_its_other_seeds(tmp_path, capsys):
    _job(tmp_path, "0", ["lr=9", "seed=1"], 0.99)  # the best finite number: would win on its finite seed alone
    _job(tmp_path, "1", ["lr=9", "seed=2"], float("nan"))
    _job(tmp_path, "2", ["lr=0.1", "seed=1"], 0.6)
    _job(tmp_path, "3", ["lr=0.1", "seed=2"], 0.6)
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    table = out.split("Not ranked")[0]
    assert "| 0.1 | 1,2 |" in table and "| 9 |" not in table
    assert "| 1 | lr=9 seed=2 | diverged: val_x = nan |" in out
    assert "| 0 | lr=9 seed=1 | diverged: val_x finite, but job 1 of this setting (another seed) diverged |" in out


def test_only_diverged_jobs_is_a_one_line_error(tmp_path, capsys):
    _job(tmp_path, "0", ["lr=9", "seed=1"], float("nan"))
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "none has a finite val_x" in err and "1 diverged" in err


# --- case 2: failed and never-run jobs are listed under the ranking -----------------------------------------------

def test_failed_and_never_run_jobs_are_listed_by_their_overrides(tmp_path, capsys):
    # 4 jobs planned (multirun.yaml); job 0 finished, job 1 failed (a log, no record), jobs 2-3 never started.
    _multirun_yaml(tmp_path, {"lr": "0.1,0.2", "seed": "1,2"}, ["paper=p", "+sweep=p"])
    _job(tmp_path, "0", ["lr=0.1", "seed=1", "paper=p", "+sweep=p"], 0.6)
    _job(tmp_path, "1", ["lr=0.1", "seed=2", "paper=p", "+sweep=p"], None)
    assert main([str(tmp_path)]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert "Not ranked: 3 jobs (1 failed, 2 never ran) of 4:" in out
    assert "| 1 | lr=0.1 seed=2 | failed: no finished result record" in out and "its log: 1/p/d/m.log" in out
    assert "| — | lr=0.2 seed=1 | never ran (the multirun stopped before it) |" in out
    assert "| — | lr=0.2 seed=2 | never ran" in out
    assert "note: 3 jobs (1 failed, 2 never ran) not ranked" in captured.err


def test_nothing_missing_says_nothing(tmp_path, capsys):
    _multirun_yaml(tmp_path, {"seed": "1,2"}, ["paper=p"])
    _job(tmp_path, "0", ["seed=1", "paper=p"], 0.6)
    _job(tmp_path, "1", ["seed=2", "paper=p"], 0.7)
    assert main([str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "Not ranked" not in captured.out and captured.err == ""


TOY_APP = """
import json, os, sys
import hydra
from hydra.core.hydra_config import HydraConfig

@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg):
    if cfg.lr == 0.2 and cfg.seed == 1:
        print("boom", file=sys.stderr)
        if cfg.get("how") == "refused":
            sys.exit(2)  # as `python -m replications` refuses a job: Hydra stops the sweep there
        raise RuntimeError("boom")  # an exception: Hydra runs the other jobs, then fails
    out = os.path.join(HydraConfig.get().runtime.output_dir, "p", "d")
    os.makedirs(out)
    record = {"complete": True, "config": {"paper": {"name": "p", "select_metric": "val_x"}},
              "runs": [{"seed": cfg.seed}], "aggregate": {"val_x": {"mean": cfg.lr * cfg.seed}}}
    with open(os.path.join(out, "m.json"), "w") as f:
        json.dump(record, f)

main()
"""


@pytest.mark.parametrize("how", ["refused", "raised"])
def test_a_real_hydra_multirun_lists_its_failed_and_never_run_jobs(tmp_path, how):
    """The multirun.yaml and job numbering of the installed Hydra, not a hand-made copy: the 3rd of 4 jobs fails."""
    (tmp_path / "conf" / "sweep").mkdir(parents=True)
    (tmp_path / "conf" / "config.yaml").write_text("lr: 0.1\nseed: 0\n")
    (tmp_path / "conf" / "sweep" / "s.yaml").write_text(
        "# @package _global_\nhydra:\n  sweeper:\n    params:\n      lr: 0.1,0.2\n      seed: 1,2\n")
    (tmp_path / "app.py").write_text(TOY_APP)
    proc = subprocess.run([sys.executable, "app.py", "--multirun", "+sweep=s", f"+how={how}", "hydra.sweep.dir=out"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "boom" in proc.stderr
    ranking = rank(jobs(tmp_path / "out"))
    args = ("+sweep=s", f"+how={how}")
    failed = ("2", "failed", ("lr=0.2", "seed=1", *args))
    if how == "refused":  # SystemExit is no Exception to Hydra: the jobs after it never start
        assert [(r["setting"]["lr"], r["seeds"]) for r in ranking.rows] == [("0.1", [1, 2])]
        assert [(j.name, j.problem, j.overrides) for j in ranking.unranked] == [
            failed, ("", "never ran", ("lr=0.2", "seed=2", *args))]
    else:  # the later job ran: its setting is ranked on the one seed it has, and the page says the seeds differ
        assert [(r["setting"]["lr"], r["seeds"]) for r in ranking.rows] == [("0.2", [2]), ("0.1", [1, 2])]
        assert [(j.name, j.problem, j.overrides) for j in ranking.unranked] == [failed]
        assert "their means are over different seeds" in markdown(ranking, ["val_x"])


# --- case 3: a corrupt job file is named in one line, the rest are ranked ------------------------------------------

@pytest.mark.parametrize("text", ['{"complete": true, "aggr', "[1, 2]", '{"complete": true}'])
def test_a_corrupt_job_file_is_named_and_the_rest_ranked(tmp_path, capsys, monkeypatch, text):
    _job(tmp_path, "0", ["lr=0.1", "seed=1"], 0.6)
    bad = _job(tmp_path, "1", ["lr=0.2", "seed=1"], 0.9, text=text)
    _job(tmp_path, "2", ["lr=0.3", "seed=1"], 0.7)
    monkeypatch.chdir(tmp_path)  # paths are shown relative to the working directory
    assert main([str(tmp_path)]) == 0
    captured = capsys.readouterr()
    warnings = [line for line in captured.err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and str(bad.relative_to(tmp_path)) in warnings[0] and "Traceback" not in captured.err
    table = captured.out.split("Not ranked")[0]
    assert table.index("| 0.3 |") < table.index("| 0.1 |") and "| 0.2 |" not in table
    assert "| 1 | lr=0.2 seed=1 | unreadable: " in captured.out


def test_a_missing_folder_is_a_one_line_error(tmp_path, capsys):
    assert main([str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a folder" in err


# --- case 4: a bad grid value is refused before the first job starts ----------------------------------------------

def _grid(capsys, *overrides: str) -> tuple[int, str, str]:
    code = sweep_grid.main(list(overrides))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(("value", "named"), [
    ("model.lr=0.01,abc", "model.lr=abc"),  # not a number: found by the project's config checks, not by Hydra
    ("model=pshgcn/dblp,nosuch", "model=nosuch"),  # an unknown model
    ("seed=1,-1", "seed=-1"),
])
def test_a_bad_grid_value_on_the_command_line_is_one_line_exit_2(capsys, value, named):
    code, out, err = _grid(capsys, "paper=pshgcn", "+sweep=pshgcn", "model.K=3", "seed=1", value)
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"error: sweep grid value {named} (job ") and "no job was started" in err
    assert "fix or remove it on the command line" in err


def test_a_model_the_paper_does_not_compare_is_refused_before_any_job(capsys):
    # rgcn composes (conf/model/rgcn.yaml exists) and would have been found only when its job started
    code, out, err = _grid(capsys, "paper=evomoe", "+sweep=evomoe_lr", "seed=1", "paper.protocol.lr=4e-3",
                           "model=evomoe_dense,rgcn")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("error: sweep grid value model=rgcn (job 1: ") and "paper 'evomoe' has no model 'rgcn'" in err
    assert "(1 of 2 jobs refused; no job was started)" in err


def test_a_bad_grid_value_in_the_sweep_file_names_the_file(tmp_path, monkeypatch, capsys):
    conf = tmp_path / "conf"
    shutil.copytree(ROOT / "conf", conf)
    (conf / "sweep" / "bad.yaml").write_text(textwrap.dedent("""\
        # @package _global_
        defaults:
          - override /dataset: dblp
        paths:
          results_dir: ${hydra:runtime.output_dir}
        hydra:
          sweeper:
            params:
              seed: 1,2
              model.lr: 0.003,fast
        """))
    monkeypatch.setattr(sweep_grid, "CONF_DIR", conf)
    code, out, err = _grid(capsys, "paper=pshgcn", "+sweep=bad", "model.K=3")
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("error: sweep grid value model.lr=fast (job 1: seed=1 model.lr=fast")
    assert "must be a number > 0" in err and "fix or remove it in conf/sweep/bad.yaml (hydra.sweeper.params)" in err
    assert "(2 of 4 jobs refused; no job was started)" in err


def test_a_good_grid_prints_the_sweep_folder(capsys):
    code, out, err = _grid(capsys, "paper=pshgcn", "+sweep=pshgcn", "model.K=3", "model.lr=0.01", "seed=1,2")
    assert code == 0 and "all 2 jobs' configs checked" in err
    assert out.strip().startswith("multirun/")
    code, out, _ = _grid(capsys, "paper=pshgcn", "+sweep=pshgcn", "model.K=3", "model.lr=0.01", "seed=1",
                         "hydra.sweep.dir=elsewhere/x")
    assert code == 0 and out.strip() == "elsewhere/x"  # the folder the multirun will write, as given


def test_the_grid_is_expanded_in_hydras_job_order():
    # BasicSweeper: the sweep config's params, then the command line; a key on both takes the command line's values
    jobs_ = sweep_grid.planned_jobs({"seed": "range(1,3)", "lr": "1,2"}, ["paper=p", "lr=5", "hydra.verbose=true"])
    assert jobs_ == [["seed=1", "lr=5", "paper=p"], ["seed=2", "lr=5", "paper=p"]]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("multirun_status", [0, 1])
def test_make_sweep_checks_the_grid_first_and_ranks_even_after_a_failed_multirun(tmp_path, multirun_status):
    """The sweep-% recipe with a stand-in python that logs each step: the grid check, the multirun into the folder the
    check named, the ranking of that folder (also after a failed multirun), then the multirun's status."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    log = tmp_path / "calls"
    fake = venv / "bin" / "python"
    fake.write_text(textwrap.dedent(f"""\
        #!/bin/bash
        echo "$*" >> {log}
        case "$2" in
          shared.sweep_grid) [ -n "$GRID_FAILS" ] && {{ echo "error: bad grid" >&2; exit 2; }}; echo multirun/d/t ;;
          replications) exit {multirun_status} ;;
        esac
        exit 0
        """))
    fake.chmod(0o755)
    (venv / ".installed").touch()  # newer than pyproject.toml: the venv target does nothing
    run = dict(args=["make", "-s", "sweep-pshgcn", f"VENV={venv}", "tracker=none"], cwd=ROOT, capture_output=True,
               text=True, timeout=60)
    proc = subprocess.run(**run)
    calls = log.read_text().splitlines()
    assert [c.split()[1] for c in calls] == ["shared.sweep_grid", "replications", "shared.sweep"]
    assert "'tracker=none'" not in calls[0] and "tracker=none" in calls[0]  # key=value reaches the check and the run
    assert calls[1].endswith("hydra.sweep.dir=multirun/d/t") and calls[2] == "-m shared.sweep multirun/d/t"
    assert (proc.returncode != 0) == bool(multirun_status)  # make's own status is 2 for a failed recipe
    if multirun_status:
        assert "error: the multirun stopped (exit 1)" in proc.stderr
    log.unlink()
    proc = subprocess.run(**run, env={**os.environ, "GRID_FAILS": "1"})
    assert proc.returncode == 2 and log.read_text().split()[1] == "shared.sweep_grid"  # no job started
