"""``python -m replications.verify results/<paper>/<dataset>/<model>.json [--seeds 0,1] [--rtol 1e-6]``

Re-runs some seeds of a committed result with the exact config stored in it and compares every metric.
A full protocol can take hours; every seed re-seeds everything (shared.seeding), so re-running a few seeds
checks that the committed numbers come from the committed code without re-running them all. On the same
machine and thread count the numbers must agree exactly; elsewhere floating-point order may move them
slightly, hence --rtol. Exit status 0 = every re-run metric agrees, 1 = a metric differs.
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
from shared.replication import Replication
from shared.runner import run

# Timing-like metrics measure the machine, not the code: reported, never compared.
UNCOMPARED = ("latency", "seconds", "tokens_per_s", "throughput")


def rerun_config(record: dict[str, Any], seeds: list[int], results_dir: Path) -> Any:
    config = record.get("config")
    if not config:
        raise ValueError("this result file stores no config (written before configs were recorded): it cannot be re-run")
    cfg = OmegaConf.create(config)
    for old in (cfg, cfg.scale):  # records made before the paths group held results_dir here
        old.pop("results_dir", None)
    cfg.seed = None
    cfg.paths = OmegaConf.merge(cfg.get("paths") or {}, {"results_dir": str(results_dir)})
    cfg.scale.seeds = seeds  # one run over the chosen seeds: the data is loaded once
    cfg.tracker = OmegaConf.merge(cfg.tracker, {"name": "none"})
    return cfg


def compare_metrics(committed: dict[str, float], rerun: dict[str, float], rtol: float) -> list[tuple[str, float, float, bool]]:
    rows = []
    for name, old in committed.items():
        if any(word in name for word in UNCOMPARED):
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
    missing = [k for k in ("paper", "dataset", "model", "runs") if not isinstance(record, dict) or k not in record]
    if missing:
        raise ValueError(f"{path} is not a result file (no {', '.join(missing)}); {hint}")
    if not record.get("complete", True):
        raise ValueError(f"{path} is a partial file (an interrupted run); re-run its command to finish it, then verify")
    return record


def parse_seeds(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        seeds = [int(s) for s in text.split(",")]
    except ValueError:
        raise ValueError(f"--seeds {text!r} is invalid: give comma-separated integers, e.g. --seeds 0,1") from None
    if any(s < 0 for s in seeds):
        raise ValueError(f"--seeds {text!r} is invalid: seeds are integers >= 0, e.g. --seeds 0,1")
    return seeds


def verify(path: Path, seeds: list[int] | None = None, rtol: float = 1e-6, replication: Replication | None = None) -> bool:
    record = read_record(path)
    by_seed = {r["seed"]: r for r in record["runs"]}
    chosen = seeds if seeds is not None else sorted(by_seed)[:1]
    unknown = [s for s in chosen if s not in by_seed]
    if unknown:
        raise ValueError(f"{path} has no seed {unknown}; its seeds: {sorted(by_seed)}")
    replication = replication or replications.get(record["paper"])
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        rerun = run(rerun_config(record, chosen, Path(tmp)), replication)
    for again in rerun["runs"]:
        seed = again["seed"]
        rows = compare_metrics(by_seed[seed]["metrics"], again["metrics"], rtol)
        print(f"\n{record['paper']}/{record['dataset']}/{record['model']} seed {seed}: committed vs re-run")
        for name, old, new, same in rows:
            print(f"  {name:<28} {old:>14.6f} {new:>14.6f}  {'same' if same else 'DIFFERENT'}")
        ok &= all(same for *_, same in rows)
    print("\nverified: every re-run metric agrees" if ok else "\nNOT verified: a metric differs (see above)")
    return ok


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[2])
    parser.add_argument("result", type=Path)
    parser.add_argument("--seeds", help="comma-separated seeds to re-run (default: the first seed of the record)")
    parser.add_argument("--rtol", type=float, default=1e-6, help="relative and absolute tolerance per metric")
    args = parser.parse_args(argv)
    if not args.result.exists():
        print(f"error: no result file {args.result}; committed ones are under results/<paper>/<dataset>/", file=sys.stderr)
        return 2
    if not (args.rtol >= 0):
        print(f"error: --rtol {args.rtol} is invalid: a tolerance is >= 0, e.g. --rtol 1e-6", file=sys.stderr)
        return 2
    try:
        return 0 if verify(args.result, parse_seeds(args.seeds), args.rtol) else 1
    except (ValueError, KeyError) as exc:  # ConfigError and DestinationError are ValueErrors too
        print(f"error: {exc.args[0] if isinstance(exc, KeyError) else exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
