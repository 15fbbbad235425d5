"""README durations come from the committed reference timing (results/timings.json, shared.readme_times), which only
`make readme-times` rewrites: a run, and `make report` after it, leave README.md as it is (issue 38)."""

from __future__ import annotations

import json

import pytest

from shared import readme_times
from shared.paths import REPO_ROOT, RESULTS


def _record(root, paper, dataset, model, seconds, scale="full"):
    path = root / paper / dataset / f"{model}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"paper": paper, "dataset": dataset, "model": model, "scale": scale, "complete": True,
                                "wall_seconds": seconds, "runs": [], "aggregate": {}, "comparison": [],
                                "environment": {"hardware": {"cpu": "AMD EPYC", "cpu_count": 2, "gpu": None}}}))


MARKED = "cell <!-- wall-time p/d1/m -->?<!-- /wall-time -->, all <!-- wall-time p -->?<!-- /wall-time -->\n"


def test_readme_times_measures_the_records_into_the_reference_file(tmp_path):
    root = tmp_path / "results"
    _record(root, "p", "d1", "m", 210.0)
    _record(root, "p", "d2", "m", 7200.0)
    _record(root, "p", "d2", "tiny", 5.0, scale="smoke")  # a smoke run never counts
    readme = tmp_path / "README.md"
    readme.write_text(MARKED)
    assert readme_times.main(["--readme", str(readme), "--results", str(root), "--load", "alone"]) == 0
    assert readme.read_text() == ("cell <!-- wall-time p/d1/m -->3.5 min<!-- /wall-time -->, "
                                  "all <!-- wall-time p -->2.1 h<!-- /wall-time -->\n")
    timings = json.loads((root / "timings.json").read_text())
    assert timings["load"] == "alone"
    assert timings["durations"]["p/d1/m"] == {"seconds": 210.0, "text": "3.5 min", "machine": "AMD EPYC, 2 cores",
                                              "records": 1}
    assert not readme_times.fill(readme, root)  # idempotent


def test_hand_timed_commands_are_kept_and_a_missing_one_is_named(tmp_path):
    root = tmp_path / "results"
    _record(root, "p", "d1", "m", 210.0)
    readme = tmp_path / "README.md"
    readme.write_text("cell <!-- wall-time p/d1/m -->?<!-- /wall-time -->, tests <!-- wall-time cmd:test -->?<!-- /wall-time -->")
    with pytest.raises(ValueError, match=r"'cmd:test' is timed by hand: add it to .*timings.json \(seconds, machine, load"):
        readme_times.update(readme, root)
    hand = {"seconds": 480, "machine": "Intel Xeon, 2 cores", "load": "alone", "source": "by hand"}
    (root / "timings.json").write_text(json.dumps({"durations": {"cmd:test": hand}}))
    readme_times.update(readme, root)
    assert readme.read_text().endswith("tests <!-- wall-time cmd:test -->8.0 min<!-- /wall-time -->")
    assert json.loads((root / "timings.json").read_text())["durations"]["cmd:test"] == hand


def test_a_new_run_leaves_the_readme_as_it_was(tmp_path):
    """The README's first command rewrote README.md ("3.5 min" became "7.6 min" from one loaded run): now a record's
    new wall time changes nothing until `make readme-times` is run on purpose."""
    root = tmp_path / "results"
    _record(root, "p", "d1", "m", 210.0)
    _record(root, "p", "d2", "m", 7200.0)
    readme = tmp_path / "README.md"
    readme.write_text(MARKED)
    readme_times.update(readme, root)
    before = readme.read_text()
    _record(root, "p", "d1", "m", 456.0)  # the same cell re-run on a loaded machine
    assert not readme_times.fill(readme, root)  # what `make report` calls
    assert readme.read_text() == before
    readme_times.update(readme, root)  # the dedicated command
    assert "7.6 min" in readme.read_text()


def test_no_reference_file_touches_nothing_and_errors_name_the_fix(tmp_path, capsys):
    root = tmp_path / "results"
    _record(root, "p", "d1", "m", 210.0)
    readme = tmp_path / "README.md"
    readme.write_text(MARKED)
    assert not readme_times.fill(readme, root)  # a results folder of one's own, no timings.json: untouched
    assert readme.read_text() == MARKED
    (root / "timings.json").write_text('{"durations": {"p": {"seconds": 1}}}')
    with pytest.raises(ValueError, match=r"'p/d1/m' is not in .*timings.json; run `make readme-times`"):
        readme_times.fill(readme, root)
    (root / "timings.json").write_text("{")
    with pytest.raises(ValueError, match="not a reference timing file"):
        readme_times.fill(readme, root)
    assert readme_times.main(["--readme", str(readme), "--results", str(root)]) == 2  # never overwritten: cmd: entries
    assert "restore it (git checkout" in capsys.readouterr().err and (root / "timings.json").read_text() == "{"
    (root / "timings.json").unlink()
    readme.write_text("<!-- wall-time p/nope -->x<!-- /wall-time -->")
    assert readme_times.main(["--readme", str(readme), "--results", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "p/nope" in err and "no complete full-scale result file" in err
    assert readme_times.main(["--readme", str(tmp_path / "none.md"), "--results", str(root)]) == 2
    assert "is not a file" in capsys.readouterr().err


def test_the_committed_readme_states_the_committed_reference(tmp_path):
    """A typed or stale duration in README.md fails here; the machine each duration was measured on is named."""
    copy = tmp_path / "README.md"
    copy.write_text((REPO_ROOT / "README.md").read_text())
    assert readme_times.MARK.search(copy.read_text()), "README.md has no generated durations"
    assert not readme_times.fill(copy, RESULTS), "README.md durations differ from results/timings.json: run `make report`"
    durations = readme_times.load_timings(RESULTS / readme_times.TIMINGS_NAME)
    for sel in {m["sel"] for m in readme_times.MARK.finditer(copy.read_text())}:
        named = durations[sel]["machine"].split(",")[0].split(" (")[0]  # 'AMD EPYC', 'Intel Xeon'
        assert named in copy.read_text(), f"README.md does not name {sel}'s machine ({named})"
