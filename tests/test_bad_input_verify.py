"""``make verify`` says what a file is and what to do (issue 38): an official.json is the authors' code, re-made by
``make official-<paper>``, not "written before configs were recorded"; a committed merged record naming seeds still
to run is verified on the seeds it has, not refused as "an interrupted run"."""

from __future__ import annotations

import json

import pytest

from replications.verify import main, read_record, verify
from shared.paths import RESULTS
from tests.test_runner import Toy, paper_file  # noqa: F401  (fixture)
from tests.test_verify import _committed


def _one_line(capsys, *argv: str) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and "Traceback" not in err, err
    return err


def test_an_official_record_says_what_it_is_and_how_it_is_remade(capsys):
    err = _one_line(capsys, str(RESULTS / "gaga" / "tolokers" / "official.json"))
    assert "is an official-code record (the authors' code run by `make official-gaga`)" in err
    assert "re-make it with `make official-gaga dataset=tolokers`" in err and "before configs" not in err


def test_an_official_record_is_known_by_its_kind_too(tmp_path, capsys):
    path = tmp_path / "copy.json"
    path.write_text(json.dumps({"paper": "rep", "dataset": "wn18rr", "model": "transe", "kind": "authors_code_run",
                                "runs": [], "complete": True}))
    assert "make official-rep dataset=wn18rr" in _one_line(capsys, str(path))


def test_a_committed_merged_record_is_a_result_not_an_interrupted_run():
    record = read_record(RESULTS / "rep" / "fb15k_237" / "complex.json")  # seeds [1] merged, [2, 3] still to run
    assert record["missing_seeds"] and not record["complete"]


def test_a_seed_still_to_run_names_the_seeds_there_are(tmp_path, capsys):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"paper": "gaga", "dataset": "tolokers", "model": "gaga", "complete": False,
                                "missing_seeds": [2, 3], "runs": [{"seed": 1, "metrics": {}}], "config": {}}))
    err = _one_line(capsys, str(path), "--seeds", "2")
    assert "has no seed [2] (a merged record: seeds [2, 3] are still to run); verify one of its seeds [1], e.g. --seeds 1" in err


def test_a_merged_record_is_verified_on_its_own_seeds(tmp_path, paper_file, capsys):  # noqa: F811
    path = _committed(tmp_path, paper_file)
    record = json.loads(path.read_text())
    record |= {"runs": record["runs"][:1], "complete": False, "missing_seeds": [2, 3], "merged_from": ["a", "b"]}
    path.write_text(json.dumps(record))
    assert verify(path, replication=Toy(paper_file))
    out = capsys.readouterr().out
    assert "a merged record of seeds [1] (seeds [2, 3] still to run); verifying seeds [1], --seeds picks others" in out


@pytest.mark.parametrize("name, record, said", [
    ("gaga.partial.json", {"complete": False, "config": {"seed": None}, "runs": []},
     "is a partial file (an interrupted run's finished seeds)"),
    ("gaga.json", {"paper": "gaga", "dataset": "tolokers", "model": "gaga", "complete": False, "runs": [], "config": {}},
     "is a partial file (complete: false, and it names no seeds still to run)"),
])
def test_a_partial_file_is_named_as_one(tmp_path, capsys, name, record, said):
    path = tmp_path / name
    path.write_text(json.dumps(record))
    assert said in _one_line(capsys, str(path))


def test_a_record_without_config_says_how_to_remake_it(tmp_path, capsys):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"paper": "gaga", "dataset": "tolokers", "model": "gaga", "complete": True,
                                "runs": [{"seed": 0, "metrics": {"test_auc": 1.0}}]}))
    err = _one_line(capsys, str(path))
    assert "stores no config" in err and "make replicate-gaga dataset=tolokers model=gaga" in err
