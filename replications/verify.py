"""``python -m replications.verify results/<paper>/<dataset>/<model>.json [--seeds 0,1] [--rtol 1e-6]``

Re-runs some seeds of a committed result with the exact config stored in it and compares every metric.
A full protocol can take hours; every seed re-seeds everything (shared.seeding), so re-running a few seeds
checks that the committed numbers come from the committed code without re-running them all.

What the numbers depend on besides code and seed is compared first (the record's ``environment.numerics``,
shared.runinfo): the ISA oneDNN dispatches to (AMX, AVX-512 BF16, AVX2...), the kernel a bf16 matmul runs and
ATen's CPU capability. On the same ISA the metrics must agree exactly (or within --rtol when given); on a
different ISA, or when the committed record predates the ISA record, exactness is not expected (a bf16 run on
AMX vs AVX-512 BF16 rounds differently, and training amplifies it): the output says so, and compares at --rtol
(default 1e-6). Timings (latency, seconds, tokens/s, throughput, *_ms*, speedups) measure the machine, not the
code: they are excluded, and the output lists them and why. A record whose metrics are all timings (HetuMoE's)
is not re-run: "nothing to compare".

Exit status 0 = no compared metric differs (including "nothing to compare", which says so), 1 = a metric
differs, 2 = an invalid request (a file that is no result, an unknown seed, an absurd --rtol). An official-code
record (``official.json``, the authors' code) is not re-run here: ``make official-<paper>`` re-makes it. A merged
record that names seeds still to run (shared.merge --seeds) is verified on the seeds it has.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

import replications
from shared.config_check import one_line
from shared.data import DataError
from shared.merge import is_partial
from shared.metric_ranges import is_timing
from shared.records import finished, is_official
from shared.replication import Replication
from shared.runinfo import numerics, precision_of
from shared.runner import run
from shared.seed_list import parse_seeds as parse_seed_list
from shared.writable import check_data_folders

DEFAULT_RTOL = 1e-6  # where exactness is not expected (another ISA, or an unrecorded one) and --rtol is not given
MAX_RTOL = 1.0  # a tolerance above 100% of the value accepts any number: not a check
TIMING_WHY = "a timing: it measures the machine, not the code"


def rerun_config(record: dict[str, Any], seeds: list[int], results_dir: Path) -> Any:
    config = record.get("config")
    if not config:
        raise ValueError(f"this result file of {record['paper']}/{record['dataset']}/{record['model']} stores no config (a "
                         "record older than stored configs), so it cannot be re-run; re-make it with `make "
                         f"replicate-{record['paper']} dataset={record['dataset']} model={record['model']}`")
    cfg = OmegaConf.create(config)
    for old in (cfg, cfg.scale):  # records made before the paths group held results_dir here
        old.pop("results_dir", None)
    if "threads" not in cfg:  # records made before conf/config.yaml's `threads`: re-run on the threads they ran with
        cfg.threads = recorded_threads(record, seeds)
    cfg.seed = None
    cfg.paths = OmegaConf.merge(cfg.get("paths") or {}, {"results_dir": str(results_dir)})
    cfg.scale.seeds = seeds  # one run over the chosen seeds: the data is loaded once
    cfg.tracker = OmegaConf.merge(cfg.tracker, {"name": "none"})
    return cfg


def recorded_threads(record: dict[str, Any], seeds: list[int]) -> int | None:
    """The torch threads a record's seeds ran with: the first chosen seed's recorded count, else the record's
    environment's, else None (torch's default)."""
    by_seed = {r["seed"]: r for r in record["runs"]}
    counts = [by_seed[s].get("torch_threads") for s in seeds if s in by_seed]
    hardware = (record.get("environment") or {}).get("hardware") or {}
    return next((c for c in counts if c is not None), hardware.get("torch_threads"))


def check_rtol(rtol: float | None) -> None:
    if rtol is not None and not (math.isfinite(rtol) and 0 <= rtol <= MAX_RTOL):
        raise ValueError(f"--rtol {rtol} is invalid: give a finite tolerance in [0, {MAX_RTOL:g}], e.g. --rtol 1e-6")


def excluded(metrics: dict[str, float]) -> dict[str, str]:
    """The metrics never compared, and why."""
    return {name: TIMING_WHY for name in metrics if is_timing(name)}


def compare_metrics(committed: dict[str, float], rerun: dict[str, float], rtol: float) -> list[tuple[str, float, float, bool]]:
    """(name, committed, re-run, same) of every metric not excluded; rtol 0 = exact (NaN equals NaN)."""
    rows = []
    skip = excluded(committed)
    for name, old in committed.items():
        if name in skip:
            continue
        new = rerun.get(name, math.nan)
        same = (math.isnan(old) and math.isnan(new)) or math.isclose(old, new, rel_tol=rtol, abs_tol=rtol)
        rows.append((name, old, new, same))
    return rows


def read_record(path: Path) -> dict[str, Any]:
    """A complete result file, or ValueError saying what the file is instead."""
    hint = "give a result file such as results/gaga/tolokers/gaga.json"
    if path.is_dir():
        raise ValueError(f"{path} is a folder, not a result file; {hint}")
    try:
        record = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}); {hint}") from exc
    if isinstance(record, dict) and (is_official(path) or record.get("kind") == "authors_code_run"):
        paper, dataset = record.get("paper", "<paper>"), record.get("dataset", "<dataset>")
        raise ValueError(f"{path} is an official-code record (the authors' code run by `make official-{paper}`), not a "
                         "result of this suite's code, so verify cannot re-run it; re-make it with `make official-"
                         f"{paper} dataset={dataset}` (needs the network or OFFICIAL_CODE_DIR), or verify one of the "
                         f"suite's records, e.g. results/{paper}/{dataset}/<model>.json")
    if isinstance(record, dict) and (is_partial(record) or path.name.endswith(".partial.json")):
        raise ValueError(f"{path} is a partial file (an interrupted run's finished seeds); rerun its command to finish "
                         "it (it resumes from this file), then verify the result file it writes")
    missing = [k for k in ("paper", "dataset", "model", "runs") if not isinstance(record, dict) or k not in record]
    if missing:
        raise ValueError(f"{path} is not a result file (no {', '.join(missing)}); {hint}")
    if not finished(record):
        raise ValueError(f"{path} is a partial file (complete: false, and it names no seeds still to run); rerun its "
                         "command to finish it, then verify")
    return record


def parse_seeds(text: str | None) -> list[int] | None:
    return None if text is None else parse_seed_list(text)


def isa_label(n: dict[str, Any]) -> str:
    """An ``environment.numerics`` in a few words: oneDNN ISA, the bf16 matmul kernel, ATen's capability."""
    parts = [str(n.get("onednn_isa") or "ISA unknown")]
    if n.get("onednn_bf16_matmul"):
        parts.append(f"bf16 matmul {n['onednn_bf16_matmul']}")
    if n.get("cpu_capability"):
        parts.append(f"ATen {n['cpu_capability']}")
    return ", ".join(parts)


def same_isa(committed: dict[str, Any], here: dict[str, Any]) -> bool:
    """Same kernels: oneDNN ISA and ATen capability equal, and the bf16 matmul kernel where both name one."""
    if committed.get("onednn_isa") is None or committed.get("onednn_isa") != here.get("onednn_isa"):
        return False
    if committed.get("cpu_capability") != here.get("cpu_capability"):
        return False
    old, new = committed.get("onednn_bf16_matmul"), here.get("onednn_bf16_matmul")
    return old is None or new is None or old == new


def tolerance(record: dict[str, Any], here: dict[str, Any], rtol: float | None) -> tuple[float, bool, str]:
    """(rtol to compare at, whether exactness is expected, the line saying why): the committed record's
    numerics against this machine's, before anything is re-run."""
    env = record.get("environment") or {}
    committed = env.get("numerics")
    precision = (committed or {}).get("precision") or precision_of(record.get("config") or {})
    bf16 = " (bf16 autocast: kernels on different ISAs round differently)" if precision == "bf16" else ""
    if committed is None or committed.get("onednn_isa") is None:
        cpu = (env.get("hardware") or {}).get("cpu", "unknown")
        use = DEFAULT_RTOL if rtol is None else rtol
        return use, False, (f"committed ISA not recorded (the record predates it; its CPU: {cpu}; here: "
                            f"{isa_label(here)}): exactness not guaranteed{bf16}, compared at rtol {use:g}")
    if not same_isa(committed, here):
        use = DEFAULT_RTOL if rtol is None else rtol
        return use, False, (f"different ISA (committed: {isa_label(committed)}, here: {isa_label(here)}): exactness "
                            f"not expected{bf16}, compared at rtol {use:g}")
    how = "compared exactly" if not rtol else f"compared at rtol {rtol:g} as asked"
    return rtol or 0.0, True, f"same ISA ({isa_label(here)}), precision {precision}: {how}"


def verify(path: Path, seeds: list[int] | None = None, rtol: float | None = None,
           replication: Replication | None = None, here: dict[str, Any] | None = None) -> bool:
    """True when no compared metric differs. ``rtol`` None: exact on the committed ISA, DEFAULT_RTOL elsewhere.
    ``here``: this machine's numerics (shared.runinfo.numerics; tests pass another)."""
    check_rtol(rtol)
    record = read_record(path)
    by_seed = {r["seed"]: r for r in record["runs"]}
    chosen = seeds if seeds is not None else sorted(by_seed)[:1]
    to_run = record.get("missing_seeds") or []
    unknown = [s for s in chosen if s not in by_seed]
    if unknown:
        still = f" (a merged record: seeds {to_run} are still to run)" if to_run else ""
        raise ValueError(f"{path} has no seed {unknown}{still}; verify one of its seeds {sorted(by_seed)}, e.g. "
                         f"--seeds {sorted(by_seed)[0]}")
    replication = replication or replications.get(record["paper"])  # an unknown paper is refused even with nothing to compare
    name = f"{record['paper']}/{record['dataset']}/{record['model']}"
    if to_run:  # a merge of the seeds done so far (shared.merge --seeds): each of its seeds can be verified
        print(f"{name}: a merged record of seeds {sorted(by_seed)} (seeds {to_run} still to run); verifying seeds {chosen}, "
              "--seeds picks others")
    skip = {m: why for s in chosen for m, why in excluded(by_seed[s]["metrics"]).items()}
    if skip:
        print(f"{name}: excluded, {TIMING_WHY}: {', '.join(skip)}")
    if all(set(by_seed[s]["metrics"]) <= set(skip) for s in chosen):
        print(f"nothing to compare: every metric of {name} is a timing; not re-run")
        return True
    use, exact, why = tolerance(record, numerics() if here is None else here, rtol)
    print(f"{name}: {why}")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        rerun = run(rerun_config(record, chosen, Path(tmp)), replication)
    for again in rerun["runs"]:
        seed = again["seed"]
        rows = compare_metrics(by_seed[seed]["metrics"], again["metrics"], use)
        print(f"\n{name} seed {seed}: committed vs re-run")
        threads = by_seed[seed].get("torch_threads"), again.get("torch_threads")
        if None not in threads and threads[0] != threads[1]:
            print(f"  note: thread count differs (committed {threads[0]}, here {threads[1]}): sums may split differently")
        for metric, old, new, same in rows:
            print(f"  {metric:<28} {old:>14.6f} {new:>14.6f}  {'same' if same else 'DIFFERENT'}")
        ok &= all(same for *_, same in rows)
    if ok:
        print("\nverified: every re-run metric agrees" + ("" if exact else f" (at rtol {use:g})"))
    elif exact:
        print("\nNOT verified: a metric differs on the committed ISA (see above)")
    else:
        print(f"\nNOT verified at rtol {use:g}, but exactness was not expected here (see the ISA line above): not by "
              "itself evidence that the code changed; re-run on the committed ISA (or with ONEDNN_MAX_CPU_ISA set to "
              "it) for an exact check")
    return ok


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[2])
    parser.add_argument("result", type=Path)
    parser.add_argument("--seeds", help="comma-separated seeds to re-run (default: the first seed of the record)")
    parser.add_argument("--rtol", type=float, default=None,
                        help="relative and absolute tolerance per metric, in [0, 1] (default: exact on the committed "
                             f"ISA, {DEFAULT_RTOL:g} on another)")
    args = parser.parse_args(argv)
    if not args.result.exists():
        print(f"error: no result file {args.result}; committed ones are under results/<paper>/<dataset>/", file=sys.stderr)
        return 2
    try:
        check_rtol(args.rtol)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        check_data_folders()  # a missing mirror or an unwritable cache: before the re-run, not inside it
        return 0 if verify(args.result, parse_seeds(args.seeds), args.rtol) else 1
    except (ValueError, KeyError, DataError) as exc:  # ConfigError and DestinationError are ValueErrors too
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
