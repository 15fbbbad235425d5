"""Bad input to `make report` and to every reader of paper.yaml (issue 38): one line naming the file and the fix,
exit 2, nothing written; a record with non-finite metrics is shown as failed, never as `nan ± nan`; the terminal
gets one line of counts (``--full``: every row and claim)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from replications import replicate
from replications import report as report_cli
from shared import destination, merge
from shared import report as report_mod
from shared.config_check import ConfigError
from shared.reference import PaperFileError, ToleranceError, load_paper
from shared.stats import summarize
from tests.report_synthetic import _record, write_synthetic
from tests.test_runner import Toy

ROOT = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("REPLICATIONS_MIRROR") or ROOT.parent / "shared" / "data")


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def tree(tmp_path) -> tuple[Path, Path]:
    """(results root, its paper.yaml) of the synthetic Toy paper; the pages built once, so reruns rewrite nothing."""
    root = write_synthetic(tmp_path)
    assert report_mod.main([str(root)]) == 0
    return root, tmp_path / "replications" / "toy" / "paper.yaml"


def _one_error_line(err: str, *parts: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


def _refused(root: Path, capsys, *parts: str) -> str:
    """The report refuses the tree in one line, exit 2, and leaves every file as it was."""
    before = snapshot(root)
    capsys.readouterr()
    assert report_mod.main([str(root)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and snapshot(root) == before
    return _one_error_line(err, *parts)


# --- 1. a YAML syntax error names the file and the line ----------------------------------------------------------------

def test_yaml_syntax_error_names_file_and_line(tree, capsys):
    root, paper = tree
    lines = paper.read_text().splitlines()
    lines[1] = "headline: {metric: test_acc, model: toy"  # the closing brace lost
    paper.write_text("\n".join(lines) + "\n")
    line = _refused(root, capsys, str(paper), "(paper toy)", "YAML syntax error at line", "fix that line")
    assert "<unicode string>" not in line


# --- 2. a string reference value: refused on load, from every entry point ---------------------------------------------

def _with_string_value(paper: Path) -> None:
    paper.write_text(paper.read_text().replace("value: 80.0", "value: '80.0%'"))


def test_string_reference_value_is_refused_on_load(tree, capsys):
    root, paper = tree
    _with_string_value(paper)
    with pytest.raises(PaperFileError, match=r"reported\[0\] \(d1/toy test_acc\)\.value is '80.0%'; write a number"):
        load_paper(paper)
    assert issubclass(PaperFileError, ConfigError)  # what replicate and a hand run print as one line
    _refused(root, capsys, str(paper), "(paper toy)", "reported[0]", ".value", "write a number")


@pytest.mark.parametrize("fields, message", [
    ("value: .nan, verified: true", "value is nan"),
    ("value: 80.0, std: -1.0, verified: true", "std is -1.0; write a number >= 0"),
    ("value: true, verified: true", "value is True"),
    ("value: 80.0, verified: 'yes'", "verified is 'yes'; write true or false"),
])
def test_other_bad_reference_fields_are_refused(tree, fields, message):
    _, paper = tree
    paper.write_text(paper.read_text().replace("value: 80.0, verified: true", fields, 1))
    with pytest.raises(PaperFileError, match=re.escape(message)):
        load_paper(paper)


def test_merge_refuses_a_bad_paper_file_in_one_line(tree, tmp_path, capsys):
    _, paper = tree
    _with_string_value(paper)
    job = tmp_path / "job.json"
    job.write_text(json.dumps(_record("d1", "toy", [80.0, 80.4], [None, None])))
    out = tmp_path / "merged.json"
    assert merge.main([str(paper), str(out), str(job)]) == 2
    _one_error_line(capsys.readouterr().err, str(paper), ".value", "write a number")
    assert not out.exists()


@pytest.mark.skipif(not (MIRROR / "DBLP").exists(), reason="the mirror is absent: set REPLICATIONS_MIRROR")
def test_replicate_refuses_a_bad_paper_file_before_training(tmp_path, monkeypatch, capsys):
    paper = tmp_path / "paper.yaml"
    paper.write_text("title: toy\nreported:\n  - {kind: paper, dataset: dblp, model: pshgcn, metric: test_micro_f1, "
                     "value: '99', source: 'Table 1', verified: true}\ntolerances: {test_micro_f1: 5.0}\n")
    committed = tmp_path / "committed"
    monkeypatch.setattr(destination, "COMMITTED", committed)
    monkeypatch.setattr(replicate.replications, "get", lambda name: Toy(paper))
    monkeypatch.setattr(replicate.report_all, "main", lambda argv: pytest.fail("no page after a refusal"))
    monkeypatch.chdir(tmp_path)
    assert replicate.main(["pshgcn", "dataset=dblp", "model=pshgcn", "tracker=none"]) == 2
    _one_error_line(capsys.readouterr().err, str(paper), ".value is '99'")
    assert not list(committed.rglob("*.json"))


# --- 3. a negative tolerance is refused on load; the records keep their comparison ------------------------------------

def test_negative_tolerance_is_refused_and_records_are_not_rewritten(tree, capsys):
    root, paper = tree
    paper.write_text(paper.read_text().replace("tolerances: {test_acc: 1.0}", "tolerances: {test_acc: -0.5}"))
    with pytest.raises(ToleranceError, match=re.escape("tolerances.test_acc is -0.5; write the absolute difference allowed")):
        load_paper(paper)
    _refused(root, capsys, str(paper), "(paper toy)", "tolerances.test_acc is -0.5")  # the records byte-identical too


# --- 4. non-finite metrics: failed, not nan ± nan, not judged ---------------------------------------------------------

def test_all_nan_record_is_failed_not_nan_plus_minus_nan(tree, capsys):
    root, _ = tree
    path = root / "toy" / "d2" / "toy.json"
    record = json.loads(path.read_text())
    for run in record["runs"]:
        run["metrics"]["test_acc"] = math.nan
    record["aggregate"]["test_acc"] = summarize([math.nan] * len(record["runs"]))
    path.write_text(json.dumps(record))
    stored = path.read_text()
    assert report_mod.main([str(root), "--full"]) == 0
    out = capsys.readouterr().out
    why = "toy/d2/toy.json: failed: non-finite test_acc in 2 of 2 seeds"
    assert "nan ±" not in out and f"failed run: {why}" in out and "1 failed (toy/d2/toy.json)" in out.splitlines()[-1]
    for page in ("README.md", "index.html"):
        text = (root / page).read_text()
        assert why in text and "nan ±" not in text
    index = json.loads((root / "index.json").read_text())
    assert index["failed_records"] == [why] and not [r for r in index["rows"] if r["dataset"] == "d2" and r["model"] == "toy"]
    assert path.read_text() == stored  # not judged: its stored comparison is not rewritten


# --- 5. a folder with no result files is refused, nothing written ------------------------------------------------------

def test_mistyped_or_empty_folder_is_refused(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    for folder, why in ((tmp_path / "reslts", "does not exist"), (tmp_path / "empty", "holds no result files")):
        assert report_cli.main([str(folder)]) == 2
        _one_error_line(capsys.readouterr().err, str(folder), why, "give the results folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"] and not any((tmp_path / "empty").iterdir())


def test_mistyped_folder_through_python_m(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "replications.report", str(tmp_path / "reslts")], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    _one_error_line(done.stderr, "reslts does not exist")
    assert not any(tmp_path.iterdir())


# --- 6. the terminal gets one line; --full keeps the listing -----------------------------------------------------------

def test_terminal_output_is_one_line_and_full_listing_behind_a_flag(tree, capsys):
    root, _ = tree
    capsys.readouterr()
    assert report_mod.main([str(root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith("report: 1 papers, 8 numbers (") and "claims" in out[0]
    assert out[0].endswith(f"-> {root / 'index.html'}")
    assert report_mod.main([str(root), "--full"]) == 0
    full = capsys.readouterr().out.splitlines()
    assert full[0] == "rows:" and full[-1] == out[0] and len(full) > 8


# --- 1 again: the official: block's reader (make official-<paper>) ------------------------------------------------

def test_official_block_reader_names_a_yaml_syntax_error_too(tmp_path):
    from shared.official import OfficialError
    from shared.official.spec import load_spec

    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "paper.yaml").write_text("title: toy\nofficial: {repository: x\n")
    with pytest.raises(OfficialError, match=r"toy/paper\.yaml \(paper toy\): YAML syntax error at line \d+"):
        load_spec("toy", papers_dir=tmp_path)
