"""A published claim as data: the ``claims:`` entries of a paper's ``paper.yaml``, validated on load.

One schema for every paper (the README's "Adding a paper" shows it)::

    - id: accuracy                      # unique within the paper
      text: "TA-MoE reaches the same model quality as the baseline gate"   # the paper's words
      short: "TA-MoE loses no accuracy vs GShard"   # <= 60 characters, a sentence with its predicate
      source: "NeurIPS supplementary, Appendix 1.1"
      source_kind: paper                # shared.reference.KINDS
      verified: false                   # was the text read from the source itself
      claim_scale: {active_params: 3.5e8, tokens: ..., hardware: "...", text: "GPT-Medium MoE, openwebtext2"}
      per_dataset: [wikitext2, tinyshakespeare]   # one verdict per dataset from this one spec
      sizes: [tinyshakespeare_2x64, tinyshakespeare, tinyshakespeare_6x192]   # the same judge at other model
                                        # sizes (a scale ladder): the per_dataset verdict among them gets the trend
      requires: ["replications.moe.charfloor:requirement"]   # named preconditions (module:function)
      caveat: "..."                     # shown beside the status
      judge: {kind: paired_difference, metric: test_ppl, arms: [ta_moe, gshard], pairing: seed,
              claimed: none, margin: 0.02, margin_relative_to: gshard, unit: "PPL"}
      # or, instead of judge:
      not_testable: "why (the claim's scale is in claim_scale)"

``judge.kind`` is one of shared.claims.kinds.KINDS; ``measure: module:function`` replaces ``metric`` where no
record holds the number (the function gets the records and returns per-unit values, as lm-evaluation-harness's
``!function``). Every error is one line naming the file, the paper, the claim and the key, and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

SHORT_MAX = 60
CLAIMED = ("positive", "negative", "none")
SOURCE_KINDS = ("paper", "authors_release", "authors_artifacts", "authors_code_run", "independent_artifacts",
                "secondary", "suite")  # shared.reference.KINDS, plus the suite's own claims (e.g. matching official code)
TOP_KEYS = {"id", "text", "short", "source", "source_kind", "verified", "claim_scale", "per_dataset", "requires",
            "caveat", "judge", "not_testable", "notes", "sizes"}
SCALE_KEYS = {"params", "active_params", "tokens", "steps", "hardware", "dataset", "text"}
# What each judge kind needs beyond `kind` (shared.claims.kinds documents what it does with them).
KIND_KEYS: dict[str, set[str]] = {
    "paired_difference": {"arms", "claimed"},
    "paired_bootstrap": {"arms", "claimed"},
    "ratio": {"arms", "claimed"},
    "threshold": {"arms", "claimed", "threshold"},
    "within_tolerance": {"arms", "tolerance"},
    "steps_to_target": {"arms", "claimed", "measure"},
    "sign": {"arms", "claimed"},
    "measured": {"measure"},  # a paper-specific judgement: the function returns the Verdict's parts itself
}
JUDGE_KEYS = {"kind", "metric", "measure", "arms", "pairing", "claimed", "margin", "margin_relative_to", "relative",
              "threshold", "tolerance", "window", "unit", "interval", "replicates", "seed", "scale", "digits", "options"}


class ClaimSpecError(ValueError):
    """A claims: entry that cannot be judged: the one-line message names file, paper, claim, key and the fix."""


@dataclass(frozen=True)
class ClaimSpec:
    paper: str
    id: str
    text: str
    short: str
    source: str
    source_kind: str
    verified: bool | None
    claim_scale: dict[str, Any]
    judge: dict[str, Any] | None = None
    not_testable: str | None = None
    per_dataset: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    sizes: tuple[str, ...] = ()
    caveat: str = ""
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def arms(self) -> list[str]:
        return list((self.judge or {}).get("arms") or [])


def _fail(where: str, claim: str, key: str, what: str, fix: str) -> ClaimSpecError:
    return ClaimSpecError(f"{where}: claim '{claim}': key '{key}' {what}; {fix}")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _numbers(mapping: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """YAML 1.1 reads 1.5e9 (no dot) as a string: such values become floats; anything else is left to be refused."""
    out = dict(mapping)
    for key in keys:
        if isinstance(out.get(key), str):
            try:
                out[key] = float(out[key])
            except ValueError:
                pass
    return out


def parse_claim(entry: Any, paper: str, where: str) -> ClaimSpec:
    """One validated ClaimSpec from one ``claims:`` entry (``where``: 'replications/<p>/paper.yaml (paper <p>)')."""
    if not isinstance(entry, dict):
        raise ClaimSpecError(f"{where}: a claims: entry must be a mapping with id, text, short, ...; got {entry!r}")
    cid = str(entry.get("id") or "?")
    unknown = set(entry) - TOP_KEYS
    if unknown:
        raise _fail(where, cid, sorted(unknown)[0], "is not a claim key", f"valid keys: {', '.join(sorted(TOP_KEYS))}")
    for key in ("id", "text", "short", "source", "source_kind"):
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            raise _fail(where, cid, key, "is missing or not a string", "give it as text")
    if len(entry["short"]) > SHORT_MAX:
        raise _fail(where, cid, "short", f"has {len(entry['short'])} characters", f"shorten it to <= {SHORT_MAX}")
    if entry["source_kind"] not in SOURCE_KINDS:
        raise _fail(where, cid, "source_kind", f"is '{entry['source_kind']}'", f"valid: {', '.join(SOURCE_KINDS)}")
    if entry.get("verified") not in (True, False, None):
        raise _fail(where, cid, "verified", f"is {entry.get('verified')!r}", "use true, false or null (unknown)")
    scale = entry.get("claim_scale")
    scale = _numbers(scale, ("params", "active_params", "tokens", "steps")) if isinstance(scale, dict) else scale
    if not isinstance(scale, dict) or not scale:
        raise _fail(where, cid, "claim_scale", "is missing", "state the paper's scale, e.g. {text: 'GPT-MoE 1.5B', "
                                                               "params: 1.5e9} (text: 'unknown' when the paper does not say)")
    if set(scale) - SCALE_KEYS:
        raise _fail(where, cid, f"claim_scale.{sorted(set(scale) - SCALE_KEYS)[0]}", "is not a scale key",
                    f"valid: {', '.join(sorted(SCALE_KEYS))}")
    for key in ("params", "active_params", "tokens", "steps"):
        if key in scale and scale[key] is not None and not _number(scale[key]):
            raise _fail(where, cid, f"claim_scale.{key}", f"is {scale[key]!r}", "give a number (e.g. 1.5e9) or null")
    judge, reason = entry.get("judge"), entry.get("not_testable")
    judge = _numbers(judge, ("margin", "threshold", "tolerance")) if isinstance(judge, dict) else judge
    if (judge is None) == (reason is None):
        raise _fail(where, cid, "judge", "and 'not_testable' are both given or both missing",
                    "give exactly one: a judge: {kind: ...} spec, or not_testable: '<reason>'")
    if judge is not None:
        _check_judge(judge, where, cid)
    per_dataset = entry.get("per_dataset") or []
    requires = entry.get("requires") or []
    sizes = entry.get("sizes") or []
    for key, value in (("per_dataset", per_dataset), ("requires", requires), ("sizes", sizes)):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _fail(where, cid, key, f"is {value!r}", "give a list of names")
    if sizes and (judge is None or len(sizes) < 2 or not set(sizes) & set(per_dataset)):
        raise _fail(where, cid, "sizes", f"is {sizes!r}", "a judged claim's sizes list >= 2 datasets (model sizes), one "
                                                           "of them in its per_dataset (the verdict that shows the trend)")
    for name in requires:
        if ":" not in name:
            raise _fail(where, cid, "requires", f"names '{name}'", "write a precondition as 'module.path:function'")
    return ClaimSpec(paper=paper, id=cid, text=entry["text"], short=entry["short"], source=entry["source"],
                     source_kind=entry["source_kind"], verified=entry.get("verified"), claim_scale=dict(scale),
                     judge=dict(judge) if judge else None, not_testable=reason, per_dataset=tuple(per_dataset),
                     requires=tuple(requires), sizes=tuple(sizes), caveat=str(entry.get("caveat") or ""),
                     notes=str(entry.get("notes") or ""))


def _check_judge(judge: Any, where: str, cid: str) -> None:
    if not isinstance(judge, dict):
        raise _fail(where, cid, "judge", f"is {judge!r}", "give a mapping with kind: and its keys")
    kind = judge.get("kind")
    if kind not in KIND_KEYS:
        raise _fail(where, cid, "judge.kind", f"is {kind!r}", f"valid: {', '.join(KIND_KEYS)}")
    unknown = set(judge) - JUDGE_KEYS
    if unknown:
        raise _fail(where, cid, f"judge.{sorted(unknown)[0]}", "is not a judge key", f"valid: {', '.join(sorted(JUDGE_KEYS))}")
    missing = sorted(KIND_KEYS[kind] - set(judge))
    if missing:
        raise _fail(where, cid, f"judge.{missing[0]}", f"is missing (kind {kind} needs {', '.join(sorted(KIND_KEYS[kind]))})",
                    "add it")
    if isinstance(judge.get("metric"), dict) and not all(isinstance(v, str) for v in judge["metric"].values()):
        raise _fail(where, cid, "judge.metric", f"is {judge['metric']!r}", "give a metric name, or {dataset: metric name}")
    if kind != "measured" and not (judge.get("metric") or judge.get("measure")):
        raise _fail(where, cid, "judge.metric", "is missing", "name a record metric, or measure: 'module:function'")
    if judge.get("measure") is not None and ":" not in str(judge["measure"]):
        raise _fail(where, cid, "judge.measure", f"is {judge['measure']!r}", "write it as 'module.path:function'")
    arms = judge.get("arms")
    if arms is not None and (not isinstance(arms, list) or not arms or not all(isinstance(a, str) for a in arms)):
        raise _fail(where, cid, "judge.arms", f"is {arms!r}", "give a list of model names, e.g. [ta_moe, gshard]")
    if kind in ("paired_difference", "paired_bootstrap", "ratio", "within_tolerance", "sign", "steps_to_target") \
            and arms is not None and len(arms) != 2:
        raise _fail(where, cid, "judge.arms", f"has {len(arms)} arms", f"kind {kind} compares two: [arm, baseline]")
    if "claimed" in judge and judge["claimed"] not in CLAIMED:
        raise _fail(where, cid, "judge.claimed", f"is {judge['claimed']!r}", f"valid: {', '.join(CLAIMED)}")
    for key in ("margin", "threshold", "tolerance"):
        values = judge[key].values() if isinstance(judge.get(key), dict) else [judge.get(key)]
        if key in judge and not all(_number(v) for v in values):
            raise _fail(where, cid, f"judge.{key}", f"is {judge[key]!r}", "give a number, or {dataset: number}")
        if key == "tolerance" and key in judge and any(v < 0 for v in values):
            raise _fail(where, cid, "judge.tolerance", f"is {judge['tolerance']}", "a tolerance is >= 0")
    if judge.get("interval", "t") not in ("t", "bootstrap", "range"):
        raise _fail(where, cid, "judge.interval", f"is {judge['interval']!r}", "valid: t, bootstrap, range")


def load_claims(path: Path, paper: str | None = None) -> list[ClaimSpec]:
    """The validated claim specs of one paper.yaml (``paper``: its folder name by default)."""
    paper = paper or path.parent.name
    where = f"{path} (paper {paper})"
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        raise ClaimSpecError(f"{path}{line}: not valid YAML ({getattr(exc, 'problem', exc)}); fix the syntax there") from None
    entries = data.get("claims") or []
    if not isinstance(entries, list):
        raise ClaimSpecError(f"{where}: claims: must be a list of claim entries")
    specs = [parse_claim(e, paper, where) for e in entries]
    ids = [s.id for s in specs]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ClaimSpecError(f"{where}: claim id '{twice[0]}' is used twice; give each claim its own id")
    return specs
