"""shared.merge destroys nothing and hides nothing (issue 38): a finished record is never replaced by a lesser or
different one without --force, another paper's paper.yaml is refused, every skipped job file is named and its seed
counted as missing, a bad --seeds is one line; the mixed-code refusal still holds through the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shared import merge
from shared.paths import PAPERS_DIR

METRICS = ("test_micro_f1", "test_macro_f1")


def _run(seed: int) -> dict:
    return {"seed": seed, "metrics": {m: 50.0 + seed for m in METRICS}, "wall_seconds": 1.0}


def _record(seeds: list[int], scale: str = "smoke", max_epochs: int = 1000, **changes) -> dict:
    """A pshgcn/imdb/rgcn record as the runner writes it: a one-seed job (seed=S) or a whole protocol."""
    job_seed = seeds[0] if len(seeds) == 1 else None
    config = {"seed": job_seed, "scale": {"name": scale, "seeds": [1] if scale == "smoke" else None},
              "paper": {"name": "pshgcn", "protocol": {"seeds": [1, 2, 3, 4, 5], "max_epochs": max_epochs}},
              "paths": {"results_dir": f"/jobs/{job_seed}"}, "tracker": {"name": "none"}}
    return {"paper": "pshgcn", "dataset": "imdb", "model": "rgcn", "scale": scale, "complete": True,
            "runs": [_run(s) for s in seeds], "wall_seconds": 1.0, "data_seconds": 0.5, "peak_memory_mb": 10.0,
            "config": config} | changes


def _write(root: Path, record: dict | str, name: str = "rgcn.json") -> Path:
    path = root / "pshgcn" / "imdb" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(record if isinstance(record, str) else json.dumps(record))
    return path


def _jobs(tmp_path: Path, *records: dict) -> list[str]:
    """One job root per record, as `paths.results_dir=DIR/<seed>` hand runs leave them."""
    roots = []
    for i, record in enumerate(records):
        _write(tmp_path / "jobs" / str(i), record)
        roots.append(str(tmp_path / "jobs" / str(i)))
    return roots


def _refused(capsys, argv: list[str]) -> str:
    assert merge.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and "Traceback" not in err, err
    return err


# --- case 1: a finished record is never replaced by a lesser or different one -------------------------------

def test_smoke_jobs_do_not_replace_a_full_protocol_record(tmp_path, capsys):
    committed = _write(tmp_path / "results", _record([1, 2, 3, 4, 5], scale="full"))
    before = committed.read_bytes()
    err = _refused(capsys, ["--roots", str(tmp_path / "results"), *_jobs(tmp_path, _record([1]), _record([2]))])
    assert f"refusing to replace {committed}" in err
    assert "existing: 5 seeds [1, 2, 3, 4, 5], scale full, complete" in err
    assert "new: 2 seeds [1, 2], scale smoke" in err and "lacks seeds [3, 4, 5]" in err and "another scale" in err
    assert "--force" in err
    assert committed.read_bytes() == before  # nothing written


def test_force_replaces_and_the_record_says_what_it_replaced(tmp_path, capsys):
    committed = _write(tmp_path / "results", _record([1, 2, 3, 4, 5], scale="full"))
    assert merge.main(["--roots", str(tmp_path / "results"), "--force", *_jobs(tmp_path, _record([1]), _record([2]))]) == 0
    out = json.loads(committed.read_text())
    assert [r["seed"] for r in out["runs"]] == [1, 2] and out["scale"] == "smoke"
    assert out["replaced"]["was"] == "5 seeds [1, 2, 3, 4, 5], scale full, complete"
    assert "another scale" in out["replaced"]["why"] and out["replaced"]["how"] == "shared.merge --force"
    assert "replacing 5 seeds" in capsys.readouterr().out


def test_fewer_seeds_of_the_same_protocol_are_refused(tmp_path, capsys):
    _write(tmp_path / "results", _record([1, 2, 3, 4, 5], scale="full"))
    err = _refused(capsys, ["--roots", str(tmp_path / "results"),
                            *_jobs(tmp_path, _record([1], scale="full"), _record([2], scale="full"))])
    assert "lacks seeds [3, 4, 5]" in err and "the merge is incomplete" in err and "another scale" not in err


def test_another_config_of_the_same_scale_is_refused(tmp_path, capsys):
    _write(tmp_path / "results", _record([1, 2, 3, 4, 5], scale="full"))
    jobs = [_record([s], scale="full", max_epochs=10) for s in (1, 2, 3, 4, 5)]
    err = _refused(capsys, ["--roots", str(tmp_path / "results"), *_jobs(tmp_path, *jobs)])
    assert "another config (paper.protocol.max_epochs)" in err and "lacks seeds" not in err


def test_more_seeds_of_the_same_experiment_replace_a_partial_merge(tmp_path, capsys):
    # seeds 1-2 merged earlier (3-5 still to run), now all five: nothing is lost, no --force needed
    _write(tmp_path / "results", _record([1, 2], scale="full", complete=False, missing_seeds=[3, 4, 5]))
    jobs = [_record([s], scale="full") for s in (1, 2, 3, 4, 5)]
    assert merge.main(["--roots", str(tmp_path / "results"), *_jobs(tmp_path, *jobs)]) == 0
    out = json.loads((tmp_path / "results" / "pshgcn" / "imdb" / "rgcn.json").read_text())
    assert out["complete"] and out["missing_seeds"] == [] and "replaced" not in out


def test_single_form_refuses_to_replace_too(tmp_path, capsys):
    committed = _write(tmp_path / "results", _record([1, 2, 3, 4, 5], scale="full"))
    job = _write(tmp_path / "job", _record([1]))
    err = _refused(capsys, [str(PAPERS_DIR / "pshgcn" / "paper.yaml"), str(committed), str(job)])
    assert "existing: 5 seeds" in err and "new: 1 seeds [1], scale smoke" in err


# --- case 2: another paper's paper.yaml -----------------------------------------------------------------------

def test_another_papers_paper_yaml_is_refused(tmp_path, capsys):
    jobs = [_write(tmp_path / str(s), _record([s])) for s in (1, 2)]
    out = tmp_path / "out.json"
    err = _refused(capsys, [str(PAPERS_DIR / "gaga" / "paper.yaml"), str(out), *map(str, jobs)])
    assert "paper 'gaga'" in err and "paper 'pshgcn'" in err and "give replications/pshgcn/paper.yaml" in err
    assert not out.exists()


# --- case 3: a job file that cannot be used is named, its seed missing -----------------------------------------

def test_a_truncated_job_file_is_named_and_its_seed_counted_missing(tmp_path, capsys):
    roots = _jobs(tmp_path, _record([1]), _record([2]))
    truncated = Path(roots[1]) / "pshgcn" / "imdb" / "rgcn.json"
    truncated.write_text(truncated.read_text()[:200])  # cut off inside the runs list
    assert merge.main(["--roots", str(tmp_path / "out"), *roots]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"skipped {truncated}: unreadable") and "seeds [2] counted as missing" in err[0]
    out = json.loads((tmp_path / "out" / "pshgcn" / "imdb" / "rgcn.json").read_text())
    assert [r["seed"] for r in out["runs"]] == [1] and out["missing_seeds"] == [2] and not out["complete"]
    assert out["skipped_jobs"][0]["seeds"] == [2] and "unreadable" in out["skipped_jobs"][0]["why"]


def test_a_job_file_with_no_seed_left_in_it_refuses_the_merge(tmp_path, capsys):
    roots = _jobs(tmp_path, _record([1]), _record([2]))
    (Path(roots[1]) / "pshgcn" / "imdb" / "rgcn.json").write_text('{"paper": "pshg')
    assert merge.main(["--roots", str(tmp_path / "out"), *roots]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[0].startswith("skipped ") and "its seeds are unknown" in err[0]
    assert err[1].startswith("error: cannot tell which seed") and "rerun that job" in err[1]
    assert not (tmp_path / "out").exists()


def test_a_partial_job_file_is_named(tmp_path, capsys):
    roots = _jobs(tmp_path, _record([1]))
    partial = _write(Path(roots[0]), {"complete": False, "config": {"seed": 2}, "runs": []}, "rgcn.partial.json")
    assert merge.main(["--roots", str(tmp_path / "out"), *roots]) == 0
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"skipped {partial}: an interrupted job's partial file") and "seeds [2] counted as missing" in err
    assert json.loads((tmp_path / "out" / "pshgcn" / "imdb" / "rgcn.json").read_text())["missing_seeds"] == [2]


def test_single_form_names_an_unreadable_input(tmp_path, capsys):
    good, bad = _write(tmp_path / "1", _record([1])), _write(tmp_path / "2", "{")
    err = _refused(capsys, [str(PAPERS_DIR / "pshgcn" / "paper.yaml"), str(tmp_path / "o.json"), str(good), str(bad)])
    assert f"cannot read job file {bad}" in err and not (tmp_path / "o.json").exists()


# --- case 4: --seeds ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seeds, said", [("abc", "give comma-separated integers"), ("1,-2", "seeds are integers in"),
                                         ("1,1", "repeats a seed")])
def test_bad_seeds_are_one_line(tmp_path, capsys, seeds, said):
    job = _write(tmp_path, _record([1]))
    err = _refused(capsys, ["--seeds", seeds, str(PAPERS_DIR / "pshgcn" / "paper.yaml"), str(tmp_path / "o.json"), str(job)])
    assert f"--seeds {seeds!r} is invalid" in err or "repeats a seed" in err
    assert said in err


# --- mixed code, through the command line -------------------------------------------------------------------------

def test_mixed_code_is_refused_unless_allowed(tmp_path, capsys):
    records = [_record([s]) for s in (1, 2)]
    for record, commit in zip(records, ("e" * 40, "f" * 40)):
        record["runs"][0]["git_commit"] = commit  # commits this repository does not have: their code cannot be compared
    roots = _jobs(tmp_path, *records)
    err = _refused(capsys, ["--roots", str(tmp_path / "out"), *roots])
    assert "not in this repository" in err and "--allow-mixed-code" in err and not (tmp_path / "out").exists()
    assert merge.main(["--roots", str(tmp_path / "out"), "--allow-mixed-code", *roots]) == 0
    out = json.loads((tmp_path / "out" / "pshgcn" / "imdb" / "rgcn.json").read_text())
    assert out["code_fingerprint"] is None and sorted(out["mixed_code"]) == ["eeeeeeeeee", "ffffffffff"]


def test_a_smoke_merge_never_goes_into_the_committed_results(tmp_path, capsys, monkeypatch):
    committed = tmp_path / "results"
    monkeypatch.setattr(merge, "COMMITTED", committed)  # the repository's results/, here a temporary one
    roots = _jobs(tmp_path, _record([1]), _record([2]))
    err = _refused(capsys, ["--roots", str(committed), *roots])
    assert "scale=smoke" in err and "outputs/smoke-results" in err and not committed.exists()
    assert merge.main(["--roots", str(tmp_path / "smoke"), *roots]) == 0
