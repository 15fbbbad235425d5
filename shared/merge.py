"""Merge result records of one (paper, dataset, model) whose seeds ran as separate jobs into one protocol record.

On a shared machine the seeds of a protocol can run as separate processes
(``python -m replications paper=P dataset=D model=M seed=S paths.results_dir=DIR/S``, or a seed list with
``paper.protocol.seeds=[4,5]``), or as a SLURM job array (``make replicate-<paper> LAUNCHER=slurm``, which prints
the ``--roots`` command: replications/cluster.py). Every seed re-seeds everything (shared.seeding), so each seed's numbers
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
config) and writes ``OUT_ROOT/<paper>/<dataset>/<model>.json``. A job file it cannot use (unreadable, an interrupted
job's ``.partial.json``) is named on stderr and its seeds count as missing.

The records merged into one must share their config (all but which seed a job ran and where it wrote) and their
code (their commits' fingerprint, and each seed's recorded one, uncommitted edits included; else ``--allow-mixed-code``
marks the record), or the merge stops in one line (exit 2); a scale=smoke merge never goes into the committed results/.
Nothing is lost: a merge never replaces a finished record with one that lacks some of its seeds, is incomplete
where it was complete, or ran another scale or config (one line naming both, exit 2); ``--force`` replaces it
deliberately and the new record's ``replaced`` says what it replaced. The paper file must be the records' paper's.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.atomic import write_json_atomic
from shared.codeprint import code_fingerprint
from shared.paths import PAPERS_DIR
from shared.paths import RESULTS as COMMITTED
from shared.records import finished, is_official, read_json
from shared.reference import compare, load_paper
from shared.runinfo import portable_paths
from shared.seed_list import parse_seeds
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
    # One commit, but each seed also records the code it ran, uncommitted edits included (shared.runner)
    ran: dict[str, list[int]] = {}
    for run in (run for r in records for run in r["runs"] if run.get("code_fingerprint")):
        ran.setdefault(run["code_fingerprint"][:10], []).append(run["seed"])
    if len(ran) > 1 and not allow_mixed:
        raise MixedCodeError(f"seeds ran different code at one commit (uncommitted edits; code fingerprint: seeds) {ran}. "
                             "Re-run those seeds with one version of the code, or pass --allow-mixed-code to merge anyway "
                             "(the record is then marked).")
    if len(ran) > 1:
        out |= {"code_fingerprint": None, "mixed_code": ran}
    return out


def check_paper_file(paper_file: Path, paper: str) -> None:
    """A paper's references live in replications/<paper>/paper.yaml: another paper's file would find no reference
    for these records (every status ``no reference``), so it is refused."""
    named = Path(paper_file).parent.name
    if named != paper:
        raise ValueError(f"{paper_file} is paper {named!r}'s paper.yaml, but the records are paper {paper!r}'s: "
                         f"give {PAPERS_DIR.name}/{paper}/paper.yaml")


def merge_records(records: list[dict[str, Any]], paper_file: Path, sources: list[str] | None = None,
                  planned: list[int] | None = None, allow_mixed_code: bool = False) -> dict[str, Any]:
    full = [r for r in records if not is_partial(r)]
    if not full:
        raise ValueError("nothing to merge: give at least one finished result record (partial files only add seeds)")
    first = full[0]
    check_paper_file(paper_file, first["paper"])
    for r in full:
        if [r.get(k) for k in KEY] != [first.get(k) for k in KEY]:
            raise ValueError(f"records disagree on {KEY}: {[r.get(k) for k in KEY]} vs {[first.get(k) for k in KEY]}")
        if not r.get("complete"):
            raise ValueError(f"incomplete record for {r['dataset']}/{r['model']}: finish it before merging")
    reference = _without_seed_choice(first["config"])
    for r in full[1:]:  # seeds of one record: only which seed and where it wrote may differ
        changed = _differences(reference, _without_seed_choice(r["config"]))
        if changed:
            raise ValueError(f"seeds {[x['seed'] for x in first['runs']]} and {[x['seed'] for x in r['runs']]} ran "
                             f"different configs ({', '.join(changed[:4])}{', ...' if len(changed) > 4 else ''}): not the "
                             "same experiment; merge each config's seeds on its own")
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


@dataclass(frozen=True)
class Skipped:
    """A job file the merge cannot use: its seeds count as missing in its group's record."""
    path: Path
    why: str
    seeds: tuple[int, ...]  # the seeds it held or was to run, as far as they can be told; () = unknown
    unreadable: bool = False

    def line(self) -> str:
        counted = f"seeds {list(self.seeds)} counted as missing" if self.seeds else "its seeds are unknown"
        return f"skipped {self.path}: {self.why}; {counted}"


SEED_IN_TEXT = re.compile(r'"seed":\s*(\d+)')  # a run's {"seed": N, ...} (or the config's seed) in a cut-off file


def _job_seeds(record: dict[str, Any]) -> tuple[int, ...]:
    """The seeds a job was to run: its config's ``seed``, else the seed list it ran, else its runs' seeds."""
    config = record.get("config") or {}
    if config.get("seed") is not None:
        return (int(config["seed"]),)
    return tuple(planned_seeds(record) or sorted(r["seed"] for r in record.get("runs") or []))


def _group_key(path: Path) -> tuple[str, str, str]:
    """(paper, dataset, model) of <root>/<paper>/<dataset>/<model>[.partial].json, from the path alone."""
    return path.parts[-3], path.parts[-2], path.name.removesuffix(".json").removesuffix(".partial")


def scan_jobs(roots: list[Path]) -> tuple[dict[tuple[str, str, str], list[tuple[Path, dict[str, Any]]]],
                                          dict[tuple[str, str, str], list[Skipped]]]:
    """Every finished record under <root>/<paper>/<dataset>/<model>.json, grouped by (paper, dataset, model), and
    every other job file there, with why it is skipped. Official-code records (make official-*) are no job's and
    are passed over without a word."""
    groups: dict[tuple[str, str, str], list[tuple[Path, dict[str, Any]]]] = {}
    skipped: dict[tuple[str, str, str], list[Skipped]] = {}
    for root in roots:
        for path in sorted(root.glob("*/*/*.json")):
            if is_official(path):
                continue
            record, error = read_json(path)
            if error is not None:
                text = path.read_bytes().decode(errors="replace") if path.is_file() else ""
                seeds = tuple(sorted({int(s) for s in SEED_IN_TEXT.findall(text)}))
                why = f"unreadable ({error.splitlines()[0]}), e.g. cut off by a full disk or a killed copy"
                skipped.setdefault(_group_key(path), []).append(Skipped(path, why, seeds, unreadable=True))
            elif not isinstance(record, dict):
                skipped.setdefault(_group_key(path), []).append(Skipped(path, "not a result record", ()))
            elif path.name.endswith(".partial.json") or not finished(record):
                done = sorted(r["seed"] for r in record.get("runs") or [] if isinstance(r, dict) and "seed" in r)
                why = (f"an interrupted job's partial file (seeds {done} finished): rerun that job's command to finish it "
                       "(it resumes), then merge again")
                skipped.setdefault(_group_key(path), []).append(Skipped(path, why, _job_seeds(record)))
            elif "paper" in record:
                groups.setdefault((record["paper"], record["dataset"], record["model"]), []).append((path, record))
    return groups, skipped


def job_records(roots: list[Path]) -> dict[tuple[str, str, str], list[tuple[Path, dict[str, Any]]]]:
    """(paper, dataset, model) -> every complete record under <root>/<paper>/<dataset>/<model>.json."""
    return scan_jobs(roots)[0]


def merge_found(groups: dict[tuple[str, str, str], list[tuple[Path, dict[str, Any]]]],
                skipped: dict[tuple[str, str, str], list[Skipped]], papers_dir: Path = PAPERS_DIR,
                allow_mixed_code: bool = False) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Each group merged over its protocol's planned seeds plus the seeds of its skipped job files."""
    out = {}
    for key, found in sorted(groups.items()):
        records = [r for _, r in found]
        lost = skipped.get(key, [])
        unknown = [s.path for s in lost if s.unreadable and not s.seeds]
        if unknown:  # a seed may be lost, and no record could say which: refuse rather than call the rest complete
            raise ValueError(f"cannot tell which seed {unknown[0]} held (unreadable, no seed in it): rerun that job "
                             "(or delete the file if its seed is elsewhere), then merge again")
        planned = sorted(set(planned_seeds(records[0]) or []).union(*(s.seeds for s in lost)))
        record = merge_records(records, papers_dir / key[0] / "paper.yaml", [str(p) for p, _ in found],
                               planned or None, allow_mixed_code)
        if lost:
            record["skipped_jobs"] = [{"file": portable_paths(str(s.path.resolve()), keep=4), "why": s.why,
                                       "seeds": list(s.seeds)} for s in lost]
        out[key] = record
    return out


def merge_roots(roots: list[Path], papers_dir: Path = PAPERS_DIR,
                allow_mixed_code: bool = False) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Every (paper, dataset, model) found under the job roots, merged over its protocol's planned seeds."""
    return merge_found(*scan_jobs(roots), papers_dir, allow_mixed_code)


def _describe(record: dict[str, Any]) -> str:
    seeds = sorted(r["seed"] for r in record.get("runs") or [])
    state = "complete" if record.get("complete") else f"missing seeds {record.get('missing_seeds')}"
    return f"{len(seeds)} seeds {seeds}, scale {record.get('scale')}, {state}"


def _differences(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ. Only keys both sides have are compared: a key one side lacks was added (or
    dropped) by a change of code since, e.g. ``paper.smoke`` or ``paths``, and code changes are check_same_code's."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [d for k in sorted(set(old) & set(new), key=str) for d in _differences(old[k], new[k], f"{prefix}{k}.")]
    return [] if old == new else [prefix.rstrip(".")]


def losses(existing: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What writing `new` over the finished record `existing` would lose ([] = nothing)."""
    dropped = sorted({r["seed"] for r in existing.get("runs") or []} - {r["seed"] for r in new["runs"]})
    out = [f"the merge lacks seeds {dropped}"] if dropped else []
    if existing.get("complete") and not new.get("complete"):
        out.append("the merge is incomplete")
    if existing.get("scale") != new.get("scale"):
        out.append("another scale")
    else:
        changed = _differences(_without_seed_choice(existing.get("config") or {}), _without_seed_choice(new.get("config") or {}))
        if changed:
            out.append(f"another config ({', '.join(changed[:4])}{', ...' if len(changed) > 4 else ''})")
    return out


class ReplaceError(ValueError):
    """Writing the merge would replace a finished record with a lesser or different one."""


def guard(target: Path, record: dict[str, Any], force: bool) -> dict[str, Any]:
    """`record` as it may be written over `target`: ReplaceError where a finished record there would lose something,
    unless ``force``; then the record names what it replaced. An unreadable or unfinished file there is no result."""
    existing, error = read_json(target) if target.is_file() else (None, None)
    if error is not None or not isinstance(existing, dict) or not finished(existing):
        return record
    why = losses(existing, record)
    if not why:
        return record
    if not force:
        raise ReplaceError(f"refusing to replace {target} (existing: {_describe(existing)}) with this merge (new: "
                           f"{_describe(record)}): {'; '.join(why)}. Write the merge to another folder, add the missing jobs, "
                           "or pass --force to replace it (the record then names what it replaced)")
    return {**record, "replaced": {"file": portable_paths(str(target.resolve()), keep=4), "was": _describe(existing),
                                   "why": "; ".join(why), "how": "shared.merge --force"}}


def main(argv: list[str]) -> int:
    if "--roots" in argv:
        return main_roots([a for a in argv if a != "--roots"])
    parser = argparse.ArgumentParser(description="merge one (paper, dataset, model)'s per-seed jobs")
    parser.add_argument("--seeds", help="planned seeds, e.g. 1,2,3,4,5: the record is complete only with all of them")
    parser.add_argument("paper_file", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("inputs", type=Path, nargs="+")
    parser.add_argument("--allow-mixed-code", action="store_true",
                        help="merge seeds that ran different code anyway; the record is marked mixed_code")
    parser.add_argument("--force", action="store_true",
                        help="replace a finished OUT.json even where the merge lacks some of its seeds or ran another "
                             "scale or config; the record then names what it replaced")
    args = parser.parse_args(argv)
    try:
        planned = parse_seeds(args.seeds) if args.seeds is not None else None
        records = []
        for path in args.inputs:  # a file named on the command line is never skipped: each one must be readable
            record, error = read_json(path)
            if error is not None:
                raise ValueError(f"cannot read job file {path} ({error.splitlines()[0]}): rerun that job, or leave the "
                                 "file out and its seed stays missing (--seeds)")
            records.append(record)
        record = merge_records(records, args.paper_file, [str(p) for p in args.inputs], planned, args.allow_mixed_code)
        record = guard(args.out, record, args.force)
    except (OSError, ValueError) as exc:  # includes MixedCodeError and ReplaceError: say what, write nothing
        print(f"error: {exc}", file=sys.stderr)
        return 2
    write_json_atomic(args.out, record)
    print(f"wrote {args.out} (seeds {[r['seed'] for r in record['runs']]}, missing {record['missing_seeds']})"
          + (f", replacing {record['replaced']['was']}" if "replaced" in record else ""))
    return 0


def main_roots(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m shared.merge --roots",
                                     description="merge every one-seed job found under the job roots")
    parser.add_argument("out_root", type=Path, help="results folder to write <paper>/<dataset>/<model>.json in")
    parser.add_argument("roots", type=Path, nargs="+", help="job folders holding <paper>/<dataset>/<model>.json")
    parser.add_argument("--allow-mixed-code", action="store_true")
    parser.add_argument("--force", action="store_true",
                        help="replace finished records even where a merge lacks some of their seeds or ran another "
                             "scale or config; each such record names what it replaced")
    args = parser.parse_args(argv)
    missing = [str(r) for r in args.roots if not r.is_dir()]
    if missing:
        print(f"error: job root {missing[0]} is not a folder; give folders holding <paper>/<dataset>/<model>.json",
              file=sys.stderr)
        return 2
    groups, skipped = scan_jobs(args.roots)
    for lost in skipped.values():
        for s in lost:
            print(s.line(), file=sys.stderr)
    try:
        merged = merge_found(groups, skipped, allow_mixed_code=args.allow_mixed_code)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # Every target is checked before any is written: a refusal leaves every record as it was, and names each one.
    targets = {key: args.out_root / key[0] / key[1] / f"{key[2]}.json" for key in merged}
    refused = []
    for key, record in merged.items():
        try:
            merged[key] = guard(targets[key], record, args.force)
        except ReplaceError as exc:
            refused.append(f"error: {exc}")
    if refused:
        print("\n".join(refused), file=sys.stderr)
        return 2
    if not merged:
        print(f"error: no complete result record under {', '.join(map(str, args.roots))}", file=sys.stderr)
        return 2
    smoke = [key for key, record in merged.items() if record.get("scale") == "smoke"]
    if smoke and args.out_root.resolve() == COMMITTED.resolve():
        print(f"error: {'/'.join(smoke[0])} ran at scale=smoke, a pipeline check: its merge never goes into the committed "
              f"{COMMITTED.name}/; give another folder, e.g. outputs/smoke-results", file=sys.stderr)
        return 2
    for key, record in merged.items():
        write_json_atomic(targets[key], record)
        print(f"wrote {targets[key]} (seeds {[r['seed'] for r in record['runs']]}, missing {record['missing_seeds']})"
              + (f", replacing {record['replaced']['was']}" if "replaced" in record else ""))
        if record["missing_seeds"]:
            print(f"note: {'/'.join(key)} lacks seeds {record['missing_seeds']}: written as incomplete (complete: false, "
                  "its page says so); run those seeds (their jobs again) and merge again")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
