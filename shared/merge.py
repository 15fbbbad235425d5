"""Merge result records of one (paper, dataset, model) whose seeds ran as separate jobs into one protocol record.

On a shared machine the seeds of a protocol can run as separate processes
(``python -m replications paper=P dataset=D model=M seed=S paths.results_dir=DIR/S``, or a seed list with
``paper.protocol.seeds=[4,5]``). Every seed re-seeds everything (shared.seeding), so each seed's numbers
equal those of a sequential run on the same machine and thread count; this concatenates their runs and
recomputes aggregate and comparison as the runner does.

An interrupted run's ``<model>.partial.json`` (whole finished seeds plus the config) may be one of the
inputs, provided its config matches the others apart from which seeds to run: e.g. seeds 1-3 of the
sequential run plus a parallel job's seeds 4-5.

    python -m shared.merge [--seeds 1,2,3] replications/<paper>/paper.yaml OUT.json IN.json [IN.json ...]
    python -m shared.merge --roots OUT_ROOT JOB_ROOT [JOB_ROOT ...]

With ``--seeds`` the record is ``complete`` only when every planned seed is in (else ``missing_seeds``
lists the rest and the report flags it). ``--roots`` is the whole-protocol form, the one front-end for every
paper: it finds every complete ``<job root>/<paper>/<dataset>/<model>.json`` (never a ``.partial.json``), groups
them by (paper, dataset, model), merges each group against its protocol's planned seeds (from the stored
config) and writes ``OUT_ROOT/<paper>/<dataset>/<model>.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from shared.atomic import write_json_atomic
from shared.codeprint import code_fingerprint
from shared.paths import PAPERS_DIR
from shared.records import complete_records
from shared.reference import compare, load_paper
from shared.runinfo import portable_paths
from shared.stats import aggregate

KEY = ("paper", "dataset", "model", "scale")
JOB_KEYS = ("seed", "paths", "results_dir", "tracker")  # which seeds a job ran, where it wrote (results_dir: records before
# the paths group), what it logged to: not the experiment


def is_partial(record: dict[str, Any]) -> bool:
    """A runner's ``.partial.json``: finished seeds and the config, nothing else."""
    return "paper" not in record and not record.get("complete") and "config" in record


def _without_seed_choice(config: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in config.items() if k not in JOB_KEYS}
    for section in ("paper", "scale"):
        if isinstance(out.get(section), dict):
            inner = dict(out[section])
            inner.pop("seeds", None)
            if isinstance(inner.get("protocol"), dict):
                inner["protocol"] = {k: v for k, v in inner["protocol"].items() if k != "seeds"}
            out[section] = inner
    return out


def merged_config(config: dict[str, Any]) -> dict[str, Any]:
    """A job's config as the merged record states it: no one job's seed or results folder."""
    out = {**config, "seed": None}
    if "paths" in out:
        out["paths"] = {**out["paths"], "results_dir": None}
    if "results_dir" in out:
        out["results_dir"] = None
    return out


class MixedCodeError(ValueError):
    """Seeds computed by different code: they do not belong in one record."""


def check_same_code(records: list[dict[str, Any]], paper: str, allow_mixed: bool = False,
                    repo: Path | None = None) -> dict[str, Any]:
    """The commits the seeds ran at, and proof that they ran the same code (the paper's code fingerprint).

    Refuses seeds whose commits differ in the files that shape the paper's numbers, or whose commits cannot
    be checked here, unless ``allow_mixed``: then the record says so loudly (``mixed_code``)."""
    commits = sorted({run.get("git_commit") or (r.get("environment") or {}).get("git_commit")
                      for r in records for run in r["runs"]} - {None})
    prints = {c: code_fingerprint(c, paper, *([repo] if repo else [])) for c in commits}
    same = len(commits) <= 1 or (None not in prints.values() and len(set(prints.values())) == 1)
    if not same and not allow_mixed:
        unknown = [c[:10] for c, fp in prints.items() if fp is None]
        why = (f"commits {unknown} are not in this repository, so their code cannot be compared" if unknown
               else "the paper's code differs between them")
        raise MixedCodeError(f"seeds ran at commits {[c[:10] for c in commits]}: {why}. Re-run those seeds at one "
                             "commit, or pass --allow-mixed-code to merge anyway (the record is then marked).")
    out: dict[str, Any] = {"git_commits": commits, "code_fingerprint": next(iter(prints.values()), None) if same else None}
    if not same:
        out["mixed_code"] = {c[:10]: fp for c, fp in prints.items()}
    return out


def merge_records(records: list[dict[str, Any]], paper_file: Path, sources: list[str] | None = None,
                  planned: list[int] | None = None, allow_mixed_code: bool = False) -> dict[str, Any]:
    full = [r for r in records if not is_partial(r)]
    if not full:
        raise ValueError("nothing to merge: give at least one finished result record (partial files only add seeds)")
    first = full[0]
    for r in full:
        if [r.get(k) for k in KEY] != [first.get(k) for k in KEY]:
            raise ValueError(f"records disagree on {KEY}: {[r.get(k) for k in KEY]} vs {[first.get(k) for k in KEY]}")
        if not r.get("complete"):
            raise ValueError(f"incomplete record for {r['dataset']}/{r['model']}: finish it before merging")
    reference = _without_seed_choice(first["config"])
    for r in records:
        if is_partial(r) and _without_seed_choice(r["config"]) != reference:
            raise ValueError("a partial file was made with a different config than the records: not the same experiment")
    runs = sorted((run for r in records for run in r["runs"]), key=lambda run: run["seed"])
    seeds = [run["seed"] for run in runs]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"duplicate seeds: a seed appears twice: {seeds}")
    missing = sorted(set(planned or []) - set(seeds))
    code = check_same_code(records, first["paper"], allow_mixed_code)
    env = dict(first.get("environment") or {})
    if env:  # dirty if any job ran uncommitted code
        env["git_dirty"] = any((r.get("environment") or {}).get("git_dirty") for r in full)
        env["command"] = portable_paths(env.get("command") or "")  # a job may have been run with an absolute results_dir
    agg = aggregate([run["metrics"] for run in runs])
    # Partial files carry no timing of their own: their seeds' wall times are in their runs.
    partial_seconds = sum(run.get("wall_seconds", 0.0) for r in records if is_partial(r) for run in r["runs"])
    return {
        **first,
        "complete": not missing,
        "missing_seeds": missing,
        "comparison": compare(load_paper(paper_file), first["dataset"], first["model"], agg),
        "aggregate": agg,
        "runs": runs,
        "wall_seconds": round(sum(r["wall_seconds"] for r in full) + partial_seconds, 2),  # = a sequential run's time
        "data_seconds": round(sum(r["data_seconds"] for r in full), 2),
        "peak_memory_mb": max(r["peak_memory_mb"] for r in full),
        "config": merged_config(first["config"]),  # the merged record covers the listed seeds
        **({"environment": env} if env else {}),
        **code,
        "merged_from": [portable_paths(str(Path(s).resolve()), keep=4) for s in sources] if sources else f"{len(records)} jobs",
    }


def planned_seeds(record: dict[str, Any]) -> list[int] | None:
    """The protocol's seeds as the record's config names them (scale.seeds wins, as in the runner)."""
    config = record.get("config") or {}
    seeds = (config.get("scale") or {}).get("seeds") or ((config.get("paper") or {}).get("protocol") or {}).get("seeds")
    return [int(s) for s in seeds] if seeds else None


def job_records(roots: list[Path]) -> dict[tuple[str, str, str], list[tuple[Path, dict[str, Any]]]]:
    """(paper, dataset, model) -> every complete record under <root>/<paper>/<dataset>/<model>.json."""
    groups: dict[tuple[str, str, str], list[tuple[Path, dict[str, Any]]]] = {}
    for root in roots:
        for path, record in complete_records(root):  # never an interrupted job's .partial.json
            if "paper" in record:
                groups.setdefault((record["paper"], record["dataset"], record["model"]), []).append((path, record))
    return groups


def merge_roots(roots: list[Path], papers_dir: Path = PAPERS_DIR,
                allow_mixed_code: bool = False) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Every (paper, dataset, model) found under the job roots, merged over its protocol's planned seeds."""
    out = {}
    for key, found in sorted(job_records(roots).items()):
        records = [r for _, r in found]
        out[key] = merge_records(records, papers_dir / key[0] / "paper.yaml", [str(p) for p, _ in found],
                                 planned_seeds(records[0]), allow_mixed_code)
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["--roots"]:
        return main_roots(argv[1:])
    parser = argparse.ArgumentParser(description="merge one (paper, dataset, model)'s per-seed jobs")
    parser.add_argument("--seeds", help="planned seeds, e.g. 1,2,3,4,5: the record is complete only with all of them")
    parser.add_argument("paper_file", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("inputs", type=Path, nargs="+")
    parser.add_argument("--allow-mixed-code", action="store_true",
                        help="merge seeds that ran different code anyway; the record is marked mixed_code")
    args = parser.parse_args(argv)
    planned = [int(s) for s in args.seeds.split(",")] if args.seeds else None
    try:
        record = merge_records([json.loads(p.read_text()) for p in args.inputs], args.paper_file,
                               [str(p) for p in args.inputs], planned, args.allow_mixed_code)
    except (OSError, ValueError) as exc:  # includes MixedCodeError and unreadable JSON: say what, write nothing
        print(f"error: {exc}", file=sys.stderr)
        return 2
    write_json_atomic(args.out, record)
    print(f"wrote {args.out} (seeds {[r['seed'] for r in record['runs']]}, missing {record['missing_seeds']})")
    return 0


def main_roots(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m shared.merge --roots",
                                     description="merge every one-seed job found under the job roots")
    parser.add_argument("out_root", type=Path, help="results folder to write <paper>/<dataset>/<model>.json in")
    parser.add_argument("roots", type=Path, nargs="+", help="job folders holding <paper>/<dataset>/<model>.json")
    parser.add_argument("--allow-mixed-code", action="store_true")
    args = parser.parse_args(argv)
    try:
        merged = merge_roots(args.roots, allow_mixed_code=args.allow_mixed_code)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not merged:
        print(f"error: no complete result record under {', '.join(map(str, args.roots))}", file=sys.stderr)
        return 2
    for (paper, dataset, model), record in merged.items():
        target = args.out_root / paper / dataset / f"{model}.json"
        write_json_atomic(target, record)
        print(f"wrote {target} (seeds {[r['seed'] for r in record['runs']]}, missing {record['missing_seeds']})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
