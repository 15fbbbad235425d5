"""Golden smoke values (as torchtune's recipe tests), one set per CPU kind: a paper's smoke run is compared against
the metrics stored in tests/golden/<isa>/<paper>.json, where <isa> is the instruction set oneDNN dispatches to on
this machine (shared.runinfo.onednn_isa: ``avx512_core_amx`` on Intel Xeon with AMX, ``avx512_core_bf16`` on AMD
EPYC). Each kind is bit-deterministic on itself but not equal to the other: bf16 autocast and the oneDNN kernel a
matmul picks (AMX tiles vs AVX-512 BF16 dot products) change the low bits, which training amplifies to ~0.5 % after
a few hundred steps. So a kind with its own set is held to RTOL; a kind with none (a user's AVX2 laptop) is held to
the stored sets at CROSS_KIND_RTOL, whose reason is below, and the failure names both kinds.

A value moves only for a reason the commit names: regenerate with ``UPDATE_GOLDEN=1 make test`` (or the one test)
on each CPU kind and commit the JSON diff beside the change. Every file records the machine that made it
(``_made_on``).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from shared.atomic import write_json_atomic
from shared.runinfo import cpu_flags, cpu_model, onednn_isa

GOLDEN_DIR = Path(__file__).with_name("golden")
RTOL = 1e-4  # same kind: runs are bit-identical; the margin absorbs summation order between CPUs of one kind
# Another kind, no set of its own: the largest relative difference between the AMX and AVX-512-BF16 sets of the
# same smoke runs is 9.7e-3 (ppyoloe_r's final classification loss after 2 bf16 steps, 1.6932 vs 1.7098; every
# fp32 metric differs by < 5e-5; test_golden.py::test_cross_kind_tolerance_covers_the_measured_spread keeps this
# true), so 3e-2 leaves a margin of ~3x for a third kind while still failing a change that moves a number by percents.
CROSS_KIND_RTOL = 3e-2
MADE_ON = "_made_on"


def this_kind() -> str:
    """The CPU kind golden values are stored under: oneDNN's ISA here (capped by ONEDNN_MAX_CPU_ISA as the runs are)."""
    flags = cpu_flags()
    max_isa = os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA")
    return onednn_isa(flags, max_isa) if flags else "unknown"


def _load(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def _moved(current: dict[str, float], want: dict[str, float], rtol: float, atol: float) -> dict:
    return {k: (current[k], want[k]) for k in want
            if not (math.isclose(current[k], want[k], rel_tol=rtol, abs_tol=atol)
                    or (math.isnan(current[k]) and math.isnan(want[k])))}  # NaN (e.g. no detections) is a value


def check_golden(paper: str, key: str, metrics: dict[str, float], rtol: float = RTOL, atol: float = 0.0,
                 folder: Path = GOLDEN_DIR, kind: str | None = None, cross_kind_rtol: float = CROSS_KIND_RTOL) -> None:
    """Assert ``metrics`` equal the stored values of ``key`` for this CPU kind (``kind``: detected when None), or,
    where this kind has none, every other kind's at ``cross_kind_rtol`` (or ``rtol`` if larger). Under
    UPDATE_GOLDEN=1 store them for this kind. A metric or key missing from the file fails with how to add it."""
    kind = kind or this_kind()
    path = folder / kind / f"{paper}.json"
    current = {k: float(v) for k, v in sorted(metrics.items())}
    if os.environ.get("UPDATE_GOLDEN") == "1":
        stored = _load(path)
        made_on = {"onednn_isa": kind, "cpu": cpu_model()}
        write_json_atomic(path, {MADE_ON: made_on, **{k: v for k, v in stored.items() if k != MADE_ON}, key: current})
        return
    stored = _load(path)
    if key in stored:
        references = {kind: stored[key]}
        tolerance = rtol
    else:  # no set for this kind: hold it to the kinds that have one, at the cross-kind tolerance
        references = {p.parent.name: _load(p)[key] for p in sorted(folder.glob(f"*/{paper}.json")) if key in _load(p)}
        tolerance = max(rtol, cross_kind_rtol)
    assert references, (f"no golden values for {paper} '{key}' on any CPU kind in {folder} (this kind: {kind}); "
                        f"run the test with UPDATE_GOLDEN=1")
    for made_on, want in references.items():
        assert set(current) == set(want), f"{paper} '{key}': metrics {sorted(current)} != golden {sorted(want)} ({made_on})"
        moved = _moved(current, want, tolerance, atol)
        same = made_on == kind
        assert not moved, (f"{paper} '{key}' smoke values moved on CPU kind {kind} against the golden values of "
                           f"{'this kind' if same else made_on} at rtol {tolerance:g} (now, golden): {moved}; if intended, "
                           f"regenerate with UPDATE_GOLDEN=1 on each CPU kind and commit {folder.name}/*/{paper}.json")
