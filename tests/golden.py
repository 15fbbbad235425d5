"""Golden smoke values (as torchtune's recipe tests): a paper's smoke run is compared against the metrics
stored in tests/golden/<paper>.json, so a change that moves a number fails CI instead of being found later.

A value moves only for a reason the commit names: regenerate with ``UPDATE_GOLDEN=1 make test`` (or the one
test) and commit the JSON diff beside the change. Tolerance: relative 1e-4 (smoke runs are deterministic on
one machine; the margin absorbs summation-order differences between CPUs of the same kind), or what a test
states for a metric that is timing-free but noisier.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from shared.atomic import write_json_atomic

GOLDEN_DIR = Path(__file__).with_name("golden")
RTOL = 1e-4


def check_golden(paper: str, key: str, metrics: dict[str, float], rtol: float = RTOL, atol: float = 0.0,
                 folder: Path = GOLDEN_DIR) -> None:
    """Assert ``metrics`` equal the stored values of ``key`` in <folder>/<paper>.json (or store them under
    UPDATE_GOLDEN=1). A metric or key missing from the file fails with how to add it."""
    path = folder / f"{paper}.json"
    stored = json.loads(path.read_text()) if path.exists() else {}
    current = {k: float(v) for k, v in sorted(metrics.items())}
    if os.environ.get("UPDATE_GOLDEN") == "1":
        write_json_atomic(path, {**stored, key: current})
        return
    assert key in stored, f"no golden values for {paper} '{key}' in {path}; run the test with UPDATE_GOLDEN=1"
    want = stored[key]
    assert set(current) == set(want), f"{paper} '{key}': metrics {sorted(current)} != golden {sorted(want)}"
    moved = {k: (current[k], want[k]) for k in want
             if not (math.isclose(current[k], want[k], rel_tol=rtol, abs_tol=atol)
                     or (math.isnan(current[k]) and math.isnan(want[k])))}  # NaN (e.g. no detections) is a value
    assert not moved, (f"{paper} '{key}' smoke values moved (now, golden): {moved}; if intended, "
                       f"regenerate with UPDATE_GOLDEN=1 and commit {path.name}")
