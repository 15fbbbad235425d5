"""Judge a paper's claim specs against its records: one ``Verdict`` per claim (per dataset with ``per_dataset``).

For each spec: the samples come from the records' metric (``runs[].metrics[metric]`` of each arm's record on the
dataset) or from the spec's ``measure`` function; preconditions (``requires``) may make the claim not testable
with their reason (the measured effect is still shown); the kind (shared.claims.kinds) decides the status; the
scale reached (the spec's ``judge.scale`` function, else what the records say) is kept beside the claim's.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from shared.claims.display import effect_text, scale_note, scale_ratio, status_text
from shared.claims.kinds import KINDS, Outcome
from shared.claims.spec import ClaimSpec, ClaimSpecError, load_claims
from shared.claims.trend import Rung, fit
from shared.report.paper_hook import Claim, PaperResults
from shared.verdict import NOT_RUN, NOT_TESTABLE, checked


@dataclass(frozen=True)
class Verdict:
    """A claim's verdict here, as every surface prints it."""

    paper: str
    id: str
    dataset: str | None
    text: str
    short: str
    source: str
    source_kind: str
    verified: bool | None
    status: str
    effect: float | None = None
    interval: tuple[float, float] | None = None
    n: int = 0
    unit: str = ""
    method: str = ""
    rule: str = ""
    evidence: str = ""
    caveat: str = ""
    scale: dict[str, Any] = field(default_factory=dict)  # reached here
    claim_scale: dict[str, Any] = field(default_factory=dict)
    scale_ratio: float | None = None
    scale_note: str = ""  # 'at 0.81M params (claim: 1.5B)' when reached far below the claim's scale
    arms: tuple[str, ...] = ()  # the judge's arms (arm, baseline), for a page that tabulates per arm
    trend: dict[str, Any] | None = None  # the same judge across the spec's sizes (shared.claims.trend.Trend.as_json)

    def __post_init__(self) -> None:
        checked(self.status)

    @property
    def display_status(self) -> str:
        return status_text(self.status, self.scale_note)

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["interval"] = list(self.interval) if self.interval is not None else None
        out["display_status"] = self.display_status
        return out


def named_function(path: str, where: str) -> Callable[..., Any]:
    """'module.path:function' -> the function (a spec's measure, scale or precondition)."""
    module, _, name = path.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ClaimSpecError(f"{where}: '{path}' cannot be loaded ({exc}); name an existing module:function") from None


def _where(spec: ClaimSpec) -> str:
    return f"replications/{spec.paper}/paper.yaml (paper {spec.paper}): claim '{spec.id}'"


def metric_samples(spec: ClaimSpec, results: PaperResults, dataset: str) -> dict[str, dict[Any, float]] | str:
    """{arm: {seed: value}} of the judge's metric; a 'not run' reason when an arm has no record on the dataset."""
    metric = per_dataset_value(spec.judge["metric"], dataset)
    out: dict[str, dict[Any, float]] = {}
    for arm in spec.arms:
        record = results.record(dataset, arm)
        if record is None:
            return f"no record of {arm} on {dataset}: make replicate-{spec.paper} dataset={dataset}"
        runs = record.get("runs") or []
        if runs and not any(metric in (r.get("metrics") or {}) for r in runs):
            raise ClaimSpecError(f"{_where(spec)}: key 'judge.metric': '{metric}' is in no run of {dataset}/{arm} "
                                 f"(metrics: {', '.join(sorted(runs[0].get('metrics') or {}))}); name one of those")
        out[arm] = {r["seed"]: float(r["metrics"][metric]) for r in runs if metric in (r.get("metrics") or {})}
    return out


UNSIGNED_KINDS = ("ratio", "steps_to_target", "threshold")
PER_DATASET = ("margin", "threshold", "tolerance", "unit")  # judge values that may be given {dataset: value}


def per_dataset_value(value: Any, dataset: str | None) -> Any:
    """A judge value given per dataset ({wikitext2: test_ppl, tinyshakespeare: valid_loss}) or once for all."""
    return value.get(dataset) if isinstance(value, dict) else value


def reached_scale(spec: ClaimSpec, results: PaperResults, dataset: str | None) -> dict[str, Any]:
    """The spec's scale function's answer, else the dataset and the hardware of the arms' records."""
    if spec.judge and spec.judge.get("scale"):
        return dict(named_function(spec.judge["scale"], _where(spec))(results, dataset, spec) or {})
    out: dict[str, Any] = {"dataset": dataset} if dataset else {}
    for arm in spec.arms:
        record = results.record(dataset, arm) if dataset else None
        if record:
            hardware = ((record.get("environment") or {}).get("hardware") or {}).get("cpu")
            if hardware:
                out["hardware"] = hardware
            break
    return out


def judge_claim(spec: ClaimSpec, results: PaperResults, dataset: str | None = None) -> Verdict:
    base = {"paper": spec.paper, "id": spec.id, "dataset": dataset, "text": spec.text, "short": spec.short,
            "source": spec.source, "source_kind": spec.source_kind, "verified": spec.verified, "caveat": spec.caveat,
            "claim_scale": spec.claim_scale}
    if spec.judge is None:
        return Verdict(**base, status=NOT_TESTABLE, evidence=spec.not_testable or "")
    judge = spec.judge
    scale = reached_scale(spec, results, dataset)
    scale_fields = {"scale": scale, "scale_ratio": scale_ratio(scale, spec.claim_scale)}
    if judge["kind"] == "measured":
        parts = named_function(judge["measure"], _where(spec))(results, dataset, spec)
        if isinstance(parts, str):
            return Verdict(**base, **scale_fields, status=NOT_RUN, evidence=parts)
        return _finish(spec, base, scale_fields, parts, results, dataset)
    if judge.get("measure"):
        samples = named_function(judge["measure"], _where(spec))(results, dataset, spec)
    else:
        if dataset is None:
            raise ClaimSpecError(f"{_where(spec)}: key 'per_dataset' is missing; a metric is judged per dataset: "
                                 "name the datasets")
        samples = metric_samples(spec, results, dataset)
    if isinstance(samples, str):  # the reason it was not run
        return Verdict(**base, **scale_fields, status=NOT_RUN, evidence=samples)
    resolved = {**judge, **{k: per_dataset_value(judge[k], dataset) for k in PER_DATASET if k in judge}}
    outcome: Outcome = KINDS[judge["kind"]](resolved, samples)
    parts = {"status": outcome.status, "effect": outcome.interval.effect, "low": outcome.interval.low,
             "high": outcome.interval.high, "n": outcome.interval.n, "method": outcome.interval.method,
             "rule": outcome.rule,
             "censored_steps": _budget(judge, samples, dataset) if outcome.censored else None}
    return _finish(spec, base, scale_fields, parts, results, dataset)


def _budget(judge: dict[str, Any], samples: Any, dataset: str | None) -> Any:
    """A censored speed-up's step budget: the measure's ``budget`` sample, else judge.options.budget (per dataset)."""
    if isinstance(samples, dict) and samples.get("budget") is not None:
        return samples["budget"]
    return per_dataset_value((judge.get("options") or {}).get("budget"), dataset)


def _finish(spec: ClaimSpec, base: dict[str, Any], scale_fields: dict[str, Any], parts: dict[str, Any],
            results: PaperResults, dataset: str | None) -> Verdict:
    judge = spec.judge or {}
    unit = parts.get("unit", per_dataset_value(judge.get("unit", ""), dataset))
    effect, low, high, n = parts.get("effect"), parts.get("low"), parts.get("high"), int(parts.get("n", 0))
    # A ratio, a speed-up or a level reads unsigned ("1.37 [1.31, 1.54] x"); a difference keeps its sign.
    signed = parts.get("signed", judge.get("kind") not in UNSIGNED_KINDS and not str(unit).lstrip().startswith("x"))
    text = "" if effect is None else effect_text(effect, low, high, n, unit, parts.get("method", "t"),
                                                  judge.get("digits", 3), parts.get("censored_steps"), signed)
    window = per_dataset_value(judge.get("window"), dataset)
    rule = parts.get("rule", "") + (f" (window: {window})" if window and parts.get("rule") else "")
    evidence = "; ".join(x for x in (text, rule, parts.get("evidence", "")) if x)
    status = parts["status"]
    for name in spec.requires:
        reason = named_function(name, _where(spec))(results, dataset, spec)  # a reason, or None when it holds
        if reason:
            status, evidence = NOT_TESTABLE, f"{reason}; measured: {evidence}"
            break
    interval = (low, high) if n > 1 and low is not None and high is not None else None
    return Verdict(**base, **scale_fields, status=status, effect=effect, interval=interval, n=n, unit=unit,
                   method=parts.get("method", ""), rule=rule, evidence=evidence, arms=tuple(spec.arms),
                   scale_note=scale_note(scale_fields["scale"], spec.claim_scale))


def size_trend(spec: ClaimSpec, results: PaperResults) -> dict[str, Any] | None:
    """The spec's judge at each of its sizes (a scale ladder's datasets) that has records, and the slope of its
    effect against log10(active parameters) (shared.claims.trend); None when fewer than two sizes were measured."""
    rungs = []
    for dataset in spec.sizes:
        v = judge_claim(spec, results, dataset)
        params = v.scale.get("active_params") or v.scale.get("params")
        if v.effect is None or not params or v.status == NOT_RUN:
            continue
        low, high = v.interval if v.interval else (None, None)
        rungs.append(Rung(dataset, float(params), float(v.effect), low, high, v.n, v.method or "t", v.status))
    if len(rungs) < 2:
        return None
    claim_params = spec.claim_scale.get("active_params") or spec.claim_scale.get("params")
    judge = spec.judge or {}
    own = next((d for d in spec.per_dataset if d in spec.sizes), None)  # the verdict that carries the trend
    threshold = per_dataset_value(judge.get("threshold"), own)
    return fit(rungs, str(judge.get("claimed", "positive")), _unit(spec, rungs), claim_params,
               float(threshold) if threshold is not None else 0.0).as_json()


def _unit(spec: ClaimSpec, rungs: list[Rung]) -> str:
    return str(per_dataset_value((spec.judge or {}).get("unit", ""), rungs[0].dataset) or "")


def judge_paper(specs: list[ClaimSpec], results: PaperResults) -> list[Verdict]:
    """Every spec's verdict, per dataset where the spec says so, in paper.yaml order; the dataset of a spec's
    sizes carries the trend across them."""
    out = []
    for spec in specs:
        for dataset in spec.per_dataset or (None,):
            verdict = judge_claim(spec, results, dataset)
            if dataset in spec.sizes:
                verdict = replace(verdict, trend=size_trend(spec, results))
            out.append(verdict)
    return out


def as_claim(verdict: Verdict) -> Claim:
    """The verdict as the page, claims.json, the index and the terminal carry it (shared.report.paper_hook.Claim)."""
    squeeze = str.maketrans("", "", "-_ ")
    named = verdict.dataset and verdict.dataset.lower().translate(squeeze) in verdict.short.lower().translate(squeeze)
    words = verdict.short + (f" ({verdict.dataset})" if verdict.dataset and not named else "")
    return Claim(text=verdict.text, source=verdict.source, verified=verdict.verified, status=verdict.status,
                 evidence=verdict.evidence, kind=verdict.source_kind, effect=verdict.effect, interval=verdict.interval,
                 unit=verdict.unit, scale=verdict.scale.get("text", ""), id=verdict.id, short=words,
                 dataset=verdict.dataset, n=verdict.n, caveat=verdict.caveat, reached_scale=verdict.scale,
                 claim_scale=verdict.claim_scale, scale_ratio=verdict.scale_ratio, scale_note=verdict.scale_note,
                 arms=list(verdict.arms), trend=verdict.trend)


def paper_claims(paper_file: Path, results: PaperResults) -> list[Claim]:
    """Every claim of one paper.yaml judged on its records: what a paper's report() puts in PaperReport.claims."""
    return [as_claim(v) for v in judge_paper(load_claims(paper_file, results.paper), results)]
