"""Durations in a README, from a committed reference timing (results/timings.json), never from the last run.

A README marks each duration ``<!-- wall-time PAPER[/DATASET[/MODEL]] -->text<!-- /wall-time -->``, or
``<!-- wall-time cmd:NAME -->`` for a command timed by hand (``make test``: no record holds it; its entry in the file
says the machine, the load and how it was measured). ``fill`` (called
by ``make report``) writes each text from ``results/timings.json`` only: a run rewrites its own record's
``wall_seconds`` but never that file, so running the README's first command leaves README.md as it was (issue 38:
one loaded run had turned the advertised "3.5 min" into "7.6 min").

``make readme-times`` (``python -m shared.readme_times [--load TEXT]``) is the one command that changes the
reference: for every marked selection it sums the ``wall_seconds`` of the complete full-scale records under results/
that match, writes them to results/timings.json with the machine the records name and the stated load (the
``cmd:`` entries are kept as they are), then fills the README from it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from shared.atomic import write_json_atomic, write_text_atomic
from shared.paths import REPO_ROOT, RESULTS
from shared.report.content import scan

MARK = re.compile(r"<!-- wall-time (?P<sel>[\w./:-]+) -->(?P<text>.*?)<!-- /wall-time -->", re.S)
TIMINGS_NAME = "timings.json"  # beside the records it summarises: results/timings.json
UNKNOWN_LOAD = "not recorded by the runs (the machine may have been shared)"
FIX = "run `make readme-times` to measure it from the committed records"
ABOUT = ("Reference durations the README states (shared.readme_times). Record selections: the summed wall_seconds of "
         "the complete full-scale records, on the machine they name; `make readme-times` re-measures them. cmd: "
         "entries: commands timed by hand, each with its machine, load and source; edited by hand.")
HAND = "cmd:"  # a selection timed by hand: kept by `make readme-times`, never measured from records


def in_words(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def matching(records: list[dict], selection: str) -> list[dict]:
    """The complete full-scale records a 'paper[/dataset[/model]]' selection names (an error when there is none)."""
    parts = selection.split("/")
    keys = ("paper", "dataset", "model")[: len(parts)]
    found = [r for r in records if r.get("scale") == "full" and [r.get(k) for k in keys] == parts]
    if not found:
        raise ValueError(f"README wall-time '{selection}': no complete full-scale result file matches it")
    return found


def wall_seconds(records: list[dict], selection: str) -> float:
    """Summed wall time of the records a 'paper[/dataset[/model]]' selection names."""
    return sum(float(r.get("wall_seconds") or 0.0) for r in matching(records, selection))


def machine(records: list[dict]) -> str:
    """The hardware the records name ('AMD EPYC, 2 cores'), several joined by '; ' (a selection run on mixed machines)."""
    names = []
    for r in records:
        hw = (r.get("environment") or {}).get("hardware") or {}
        cpu = hw.get("cpu") or "CPU not recorded"
        name = f"{cpu}, {hw['cpu_count']} cores" if hw.get("cpu_count") else str(cpu)
        names.append(f"{name}, GPU {hw['gpu']}" if hw.get("gpu") else name)
    return "; ".join(dict.fromkeys(names))


def timings_path(root: Path) -> Path:
    return root / TIMINGS_NAME


def load_timings(path: Path, fix: str = FIX) -> dict[str, Any]:
    """The reference file's ``durations``; a file that is not what ``make readme-times`` writes is an error naming it."""
    try:
        data = json.loads(path.read_text())
        durations = data["durations"]
        if not all(isinstance(v, dict) and isinstance(v.get("seconds"), (int, float)) for v in durations.values()):
            raise TypeError("a duration without numeric seconds")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{path} is not a reference timing file ({type(exc).__name__}: {exc}); {fix}") from None
    return durations


def fill(readme: Path, root: Path) -> bool:
    """Rewrite every marked duration of ``readme`` from ``<root>/timings.json``; True when the file changed.
    Without a timings file (a results folder of one's own) nothing is touched; the records are never read here."""
    path = timings_path(root)
    if not readme.exists() or not path.exists():
        return False
    durations = load_timings(path)
    text = readme.read_text()

    def words(m: re.Match) -> str:
        if m["sel"] not in durations:
            raise ValueError(f"README wall-time '{m['sel']}' is not in {path}; {FIX}")
        return f"<!-- wall-time {m['sel']} -->{in_words(float(durations[m['sel']]['seconds']))}<!-- /wall-time -->"

    new = MARK.sub(words, text)
    if new != text:
        write_text_atomic(readme, new)
    return new != text


def update(readme: Path, root: Path, load: str = UNKNOWN_LOAD) -> Path:
    """Measure every marked selection from the records under ``root``, write ``<root>/timings.json``, fill ``readme``."""
    records = scan(root)[0]
    selections = list(dict.fromkeys(m["sel"] for m in MARK.finditer(readme.read_text())))
    if not selections:
        raise ValueError(f"{readme} marks no duration (<!-- wall-time PAPER[/DATASET[/MODEL]] -->...<!-- /wall-time -->)")
    path = timings_path(root)
    # Its cmd: entries were typed by hand: an unreadable file is repaired, never overwritten without them.
    repair = f"restore it (git checkout -- {path}) or delete it"
    kept = {k: v for k, v in load_timings(path, repair).items() if k.startswith(HAND)} if path.exists() else {}
    durations = {}
    for sel in selections:
        if sel.startswith(HAND):
            if sel not in kept:
                raise ValueError(f"README wall-time '{sel}' is timed by hand: add it to {path} (seconds, machine, load, "
                                 "how it was measured)")
            durations[sel] = kept[sel]
            continue
        found = matching(records, sel)
        durations[sel] = {"seconds": round(wall_seconds(found, sel), 2), "text": in_words(wall_seconds(found, sel)),
                          "machine": machine(found), "records": len(found)}
    write_json_atomic(timings_path(root), {
        "about": ABOUT,
        "load": load, "durations": durations})
    fill(readme, root)
    return timings_path(root)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shared.readme_times",
                                     description="re-measure the README's durations from the committed records")
    parser.add_argument("--readme", type=Path, default=REPO_ROOT / "README.md")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--load", default=UNKNOWN_LOAD, help="what else ran on the machine during the runs")
    args = parser.parse_args(argv)
    try:
        if not args.readme.is_file():
            raise ValueError(f"README {args.readme} is not a file; give --readme PATH")
        if not args.results.is_dir():
            raise ValueError(f"results folder {args.results} is not a folder; give --results DIR")
        written = update(args.readme, args.results, args.load)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {written} and the durations of {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
