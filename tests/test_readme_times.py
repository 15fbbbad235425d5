"""README durations come from the result files (shared.readme_times): filled by `make report`, never typed."""

from __future__ import annotations

import json

import pytest

from shared import readme_times
from shared.paths import REPO_ROOT, RESULTS


def _record(root, paper, dataset, model, seconds, scale="full"):
    path = root / paper / dataset / f"{model}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"paper": paper, "dataset": dataset, "model": model, "scale": scale, "complete": True,
                                "wall_seconds": seconds, "runs": [], "aggregate": {}, "comparison": []}))


def test_marked_durations_are_rewritten_from_the_records(tmp_path):
    root = tmp_path / "results"
    _record(root, "p", "d1", "m", 210.0)
    _record(root, "p", "d2", "m", 7200.0)
    _record(root, "p", "d2", "tiny", 5.0, scale="smoke")  # a smoke run never counts
    readme = tmp_path / "README.md"
    readme.write_text("cell <!-- wall-time p/d1/m -->?<!-- /wall-time -->, all <!-- wall-time p -->?<!-- /wall-time -->\n")
    assert readme_times.fill(readme, root)
    assert readme.read_text() == ("cell <!-- wall-time p/d1/m -->3.5 min<!-- /wall-time -->, "
                                  "all <!-- wall-time p -->2.1 h<!-- /wall-time -->\n")
    assert not readme_times.fill(readme, root)  # idempotent
    readme.write_text("<!-- wall-time p/nope -->x<!-- /wall-time -->")
    with pytest.raises(ValueError, match="p/nope"):
        readme_times.fill(readme, root)


def test_the_committed_readme_states_the_committed_durations(tmp_path):
    """A typed or stale duration in README.md fails here: `make report` rewrites them from results/."""
    copy = tmp_path / "README.md"
    copy.write_text((REPO_ROOT / "README.md").read_text())
    assert readme_times.MARK.search(copy.read_text()), "README.md has no generated durations"
    assert not readme_times.fill(copy, RESULTS), "README.md durations differ from results/: run `make report`"
