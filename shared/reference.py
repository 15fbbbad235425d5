"""A paper's reference numbers (its paper.yaml) and the comparison of a reproduction against them.

paper.yaml holds ``reported``: a list of entries {dataset, model, metric, value, std, kind, source, verified,
note}; ``value: null`` means the number is unknown (never guessed). ``kind`` says what sort of reference a
number is (``KINDS``, strongest first); one (dataset, model, metric) may have one entry per kind, and the
status is computed against the strongest kind whose value is known. ``tolerances`` maps a metric to the
absolute difference (in the metric's own units) within which a reproduction counts as reproduced.
``targets`` (optional) maps a metric to ``highest`` or ``lowest``: for that metric the status is computed
against the best known value among its references (ties: the stronger kind) instead of the strongest
kind. A paper declares it where its references are all of one sort (e.g. converged base models run by
different teams) and the more demanding one is the bar.

Official-code records (results/<paper>/<dataset>/official.json, written by ``python -m shared.official``) are
references too: ``load_paper`` adds one ``authors_code_run`` entry per metric of each that the paper declares a
tolerance for (mean, std, n over its seeds), which replaces any hand-copied ``authors_code_run`` entry of the same
dataset, model and metric.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

from shared.config_check import ConfigError
from shared.paths import PAPERS_DIR, REPO_ROOT, RESULTS
from shared.records import OFFICIAL_NAME, read_json
from shared.verdict import NO_REFERENCE, NOT_REPRODUCED, REPRODUCED, number_status  # noqa: F401 (re-exported)

# Strongest first. The paper's own claim outranks the authors' other statements; numbers the authors
# published (release, artifacts) outrank a run of their code by someone else; another team's own run, shipped
# as files we recompute from, is below every authors' kind but above a bare copy of a number, which is last.
KINDS: dict[str, str] = {
    "paper": "the paper's own table or text",
    "authors_release": "the authors' release (README, docs, leaderboard entry)",
    "authors_artifacts": "the authors' released artifacts (e.g. rank files), recomputed",
    "authors_code_run": "the official code run at a pinned commit on stated hardware and seeds",
    "independent_artifacts": "another team's released run files (e.g. per-query ranks) of the same model and split, recomputed",
    "secondary": "another paper's copy of the number",
}
# What an entry of each kind must say about itself, beyond the common keys.
KIND_KEYS = {"authors_code_run": {"provenance"}, "independent_artifacts": {"run_by"}, "secondary": {"copied_by"}}
TARGET_RULES = ("highest", "lowest")
COMMON_KEYS = {"dataset", "model", "metric", "value", "kind", "source", "verified"}


class PaperFileError(ConfigError):
    """A paper.yaml that cannot be read or breaks its schema: the message names the file, the paper, the key and
    the fix. A ConfigError, so every entry point (report, merge, replicate, a hand run) prints it as one line."""


class ToleranceError(PaperFileError):
    """A tolerance that cannot judge anything: not a number >= 0 (a negative one would fail even an exact match),
    or missing for a metric with a known reference."""


def _shown(path: Path) -> str:
    """The file as a reader finds it: relative to the checkout when it is one of its files."""
    path = Path(path)
    try:
        return path.resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return str(path)


def _where(path: Path) -> str:
    return f"{_shown(path)} (paper {Path(path).resolve().parent.name})"


def read_paper_yaml(path: Path) -> dict[str, Any]:
    """The file's mapping as written (unchecked): a YAML syntax error or an unreadable file is a PaperFileError naming
    the file and, for a syntax error, its line (yaml alone says `in "<unicode string>"`)."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        at = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        what = " ".join(str(part) for part in (exc.context, exc.problem) if part)
        raise PaperFileError(f"{_where(path)}: YAML syntax error at{at}: {what}; fix that line (quote a value that "
                             f"holds ': ' or ' #', indent with spaces, close every bracket and quote)") from None
    except yaml.YAMLError as exc:
        raise PaperFileError(f"{_where(path)}: not valid YAML ({' '.join(str(exc).split())}); fix the file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PaperFileError(f"{_where(path)}: cannot be read ({exc}); restore it with `git checkout -- {_shown(path)}`") \
            from None
    if not isinstance(data, dict):
        raise PaperFileError(f"{_where(path)}: holds {type(data).__name__}, not a mapping; write the keys title, "
                             f"reported and tolerances at the top level")
    return data


def _number(value: Any) -> bool:
    """A finite int or float (YAML's true/false are bools, not numbers; .nan and .inf are no reference)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_paper(paper: dict[str, Any], path: Path) -> None:
    """The schema every reader relies on, checked before any number is compared: types, tolerances >= 0, references
    numeric. The first problem is a PaperFileError (or ToleranceError) naming the file, paper, key and fix."""
    where = _where(path)
    for key in ("title", "reported", "tolerances"):
        if key not in paper:
            raise PaperFileError(f"{where}: missing required key '{key}'; add it (see shared/reference.py)")
    if not isinstance(paper["title"], str):
        raise PaperFileError(f"{where}: title is {paper['title']!r}; write the paper's title as a string")
    tolerances = paper["tolerances"]
    if not isinstance(tolerances, dict):
        raise ToleranceError(f"{where}: tolerances is {tolerances!r}; write a mapping metric: number ({{}} for none)")
    for metric, tol in tolerances.items():
        if tol is not None and (not _number(tol) or tol < 0):
            raise ToleranceError(f"{where}: tolerances.{metric} is {tol!r}; write the absolute difference allowed, "
                                 f"a number >= 0 in the metric's units (e.g. 0.5), or null for none")
    if not isinstance(paper["reported"], list):
        raise PaperFileError(f"{where}: reported is {paper['reported']!r}; write a list of entries ([] for none)")
    seen = set()
    for i, entry in enumerate(paper["reported"]):
        if not isinstance(entry, dict):
            raise PaperFileError(f"{where}: reported[{i}] is {entry!r}; write a mapping {{dataset, model, metric, "
                                 f"value, kind, source, verified}}")
        missing = COMMON_KEYS - entry.keys()
        if missing:
            raise PaperFileError(f"{where}: reported entry {entry} lacks {sorted(missing)}")
        for key in ("dataset", "model", "metric", "kind"):
            if not isinstance(entry[key], str):
                raise PaperFileError(f"{where}: reported[{i}].{key} is {entry[key]!r}; write a name (a string)")
        label = f"reported[{i}] ({entry['dataset']}/{entry['model']} {entry['metric']})"
        for key in ("value", "std"):
            value = entry.get(key)
            if value is not None and (not _number(value) or (key == "std" and value < 0)):
                bound = " >= 0" if key == "std" else ""
                raise PaperFileError(f"{where}: {label}.{key} is {value!r}; write a number{bound} (no units or %), "
                                     f"or null when it is not known")
        if entry["verified"] is not None and not isinstance(entry["verified"], bool):
            raise PaperFileError(f"{where}: {label}.verified is {entry['verified']!r}; write true or false")
        if entry["kind"] not in KINDS:
            raise PaperFileError(f"{where}: reported entry {entry} has kind '{entry['kind']}'; valid: {', '.join(KINDS)}")
        missing = {k for k in KIND_KEYS.get(entry["kind"], set()) if entry.get(k) in (None, "", {})}
        if missing and entry["value"] is not None:  # an unknown value has no copy or run to describe
            raise PaperFileError(f"{where}: a '{entry['kind']}' reference must give {sorted(missing)} (missing or null): "
                                 f"{entry}")
        key = (entry["dataset"], entry["model"], entry["metric"], entry["kind"])
        if key in seen:
            raise PaperFileError(f"{where}: two '{entry['kind']}' references for {key[:3]}: keep one per kind")
        seen.add(key)
    targets = paper.get("targets") or {}
    if not isinstance(targets, dict):
        raise PaperFileError(f"{where}: targets is {targets!r}; write a mapping metric: highest or lowest")
    for metric, rule in targets.items():
        if rule not in TARGET_RULES:
            raise PaperFileError(f"{where}: targets.{metric} is '{rule}'; valid: {', '.join(TARGET_RULES)}")


def load_paper(path: Path, results_root: Path | None = None) -> dict[str, Any]:
    """The paper file, checked (check_paper), with the official-code records under ``results_root`` added as
    references (default: the committed results/ when the file is one of this checkout's papers; else none).
    Every reader of a paper.yaml (report, merge, a run) comes here, so a bad file is refused by each the same way."""
    paper = read_paper_yaml(path)
    check_paper(paper, path)
    folder = Path(path).resolve().parent
    if results_root is None and folder.parent == PAPERS_DIR:
        results_root = RESULTS
    if not results_root:
        return paper
    # Only metrics the paper judges (a declared tolerance): an official record also holds e.g. validation scores or
    # best epochs, kept in the record but no reference (a known reference without a tolerance is an error).
    judged = [e for e in official_references(results_root, folder.name) if e["metric"] in paper["tolerances"]]
    return with_official(paper, judged)


def official_references(results_root: Path, paper: str) -> list[dict[str, Any]]:
    """One authors_code_run entry per metric of every official-code record of `paper` under `results_root`.
    A damaged record is an error naming it (it would silently drop a reference otherwise)."""
    entries = []
    for path in sorted((Path(results_root) / paper).glob(f"*/{OFFICIAL_NAME}")):
        record, error = read_json(path)
        rel = f"results/{paper}/{path.parent.name}/{OFFICIAL_NAME}"
        if error or not isinstance(record, dict) or record.get("complete") is not True \
                or not isinstance(record.get("aggregate"), dict):
            raise ConfigError(f"{rel}: not a complete official-code record ({error or 'no aggregate or not complete'}); "
                             f"re-run `make official-{paper} dataset={path.parent.name}` or delete it")
        seeds = [r.get("seed") for r in record.get("runs") or []]
        cpu = (record.get("environment") or {}).get("hardware", {}).get("cpu")
        provenance = {"record": rel, "repository": record.get("repository"), "commit": record.get("commit"),
                      "patches": [p.get("path") for p in record.get("patches") or []], "seeds": seeds, "cpu": cpu}
        for metric, agg in record["aggregate"].items():
            entries.append({
                "dataset": record["dataset"], "model": record["model"], "metric": metric, "value": agg["mean"],
                "std": agg["std"], "n": agg["n"], "kind": "authors_code_run", "verified": True,
                "source": f"the official code ({record.get('repository')} @ {str(record.get('commit'))[:12]}) run here "
                          f"on {len(seeds)} seeds: {rel}",
                "provenance": provenance})
    return entries


def with_official(paper: dict[str, Any], entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The paper with `entries` as its authors_code_run references, replacing hand-copied ones of the same
    (dataset, model, metric); other kinds stay (one entry per kind)."""
    if not entries:
        return paper
    keys = {(e["dataset"], e["model"], e["metric"]) for e in entries}
    replaced = {(e["dataset"], e["model"], e["metric"]): e for e in paper["reported"]
                if e["kind"] == "authors_code_run" and (e["dataset"], e["model"], e["metric"]) in keys}
    kept = [e for e in paper["reported"] if (e["dataset"], e["model"], e["metric"]) not in replaced
            or e["kind"] != "authors_code_run"]
    # A hand-written entry's caveat (what a reader must know about the official runs) stays with the record's value.
    caveats = {k: e["caveat"] for k, e in replaced.items() if e.get("caveat")}
    entries = [{**e, "caveat": caveats[k]} if (k := (e["dataset"], e["model"], e["metric"])) in caveats else e
               for e in entries]
    return {**paper, "reported": kept + entries}


def references_for(paper: dict[str, Any], dataset: str, model: str) -> dict[str, list[dict[str, Any]]]:
    """metric -> its reference entries, strongest kind first (unknown values included)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for e in paper["reported"]:
        if e["dataset"] == dataset and e["model"] == model:
            out.setdefault(e["metric"], []).append(e)
    rank = list(KINDS)
    return {m: sorted(es, key=lambda e: rank.index(e["kind"])) for m, es in out.items()}


def strongest(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The strongest entry with a known value, else the strongest entry (unknown), else {}."""
    known = [e for e in entries if e.get("value") is not None]
    return (known or entries or [{}])[0]


def target(paper: dict[str, Any], metric: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The entry a metric is judged against: the strongest known kind, or the best value under ``targets``."""
    rule = (paper.get("targets") or {}).get(metric)
    known = [e for e in entries if e.get("value") is not None]
    if rule is None or not known:
        return strongest(entries)
    pick = max if rule == "highest" else min  # both return the first best: entries come strongest kind first
    return pick(known, key=lambda e: e["value"])


def reported_for(paper: dict[str, Any], dataset: str, model: str) -> dict[str, dict[str, Any]]:
    """metric -> the entry the status is computed against."""
    return {m: target(paper, m, es) for m, es in references_for(paper, dataset, model).items()}


def _status(mean: float, value: float | None, tol: float | None, metric: str = "", paper: str = "") -> tuple[str, float | None]:
    if value is not None and tol is None:
        raise ToleranceError(f"{paper or 'paper.yaml'}: metric '{metric}' has a known reference but no tolerance; "
                             f"declare tolerances.{metric} (an absolute difference in the metric's units)")
    return number_status(mean, value, tol)


def compare(
    paper: dict[str, Any], dataset: str, model: str, aggregate: dict[str, dict[str, float]]
) -> list[dict[str, Any]]:
    """One row per reproduced metric: the strongest known reference, difference, status, and every other reference."""
    refs = references_for(paper, dataset, model)
    rows = []
    for metric, agg in aggregate.items():
        entries = refs.get(metric, [])
        ref = target(paper, metric, entries)
        tol = paper["tolerances"].get(metric)
        status, diff = _status(agg["mean"], ref.get("value"), tol, metric, paper.get("title", ""))
        others = [
            {"kind": e["kind"], "value": e["value"], "std": e.get("std"), "source": e["source"],
             "copied_by": e.get("copied_by"),
             "status": _status(agg["mean"], e["value"], tol, metric, paper.get("title", ""))[0]}
            for e in entries if e is not ref and e.get("value") is not None
        ]
        rows.append(
            {
                "metric": metric,
                "reproduced_mean": agg["mean"],
                "reproduced_std": agg["std"],
                "n": agg["n"],
                "ci95": [agg["ci95_low"], agg["ci95_high"]],
                "reported": ref.get("value"),
                "reported_std": ref.get("std"),
                "reference_kind": ref.get("kind") if ref.get("value") is not None else None,
                "source": ref.get("source"),
                "copied_by": ref.get("copied_by"),
                "verified": ref.get("verified"),
                "tolerance": tol,
                "difference": diff,
                "status": status,
                "other_references": others,
                **({"caveat": ref["caveat"]} if ref.get("caveat") else {}),  # shown beside the status
            }
        )
    return rows


def recompare(record: dict[str, Any], paper: dict[str, Any]) -> list[dict[str, Any]]:
    """A stored record's comparison against the paper file as it is now (references may have been added)."""
    return compare(paper, record["dataset"], record["model"], record["aggregate"])
