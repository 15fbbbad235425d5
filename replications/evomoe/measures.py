"""EvoMoE's paper-specific parts of its claim specs (paper.yaml ``claims:``, judged by shared.claims): the steps to
Switch's final validation loss, the WikiText-2 bigram precondition, and the scale each verdict was reached at.

Speed (the v1 abstract's "reaches Switch's validation perplexity 2.0x faster"), per seed: Switch's steps to its own
final validation-subset loss (its first curve point at or below it) divided by EvoMoE's steps to that same loss
(speedup.seed_rows; the curve's points are the resolution). A seed whose EvoMoE run never reaches the target counts
as Switch's steps / the run's last step, capped at 1: a censored upper bound (kind steps_to_target), which can
contradict "faster" but never support it.
"""

from __future__ import annotations

import functools
from typing import Any

from replications.evomoe import charbench, speedup
from replications.moe.scale import lm_scale, model_from_record
from shared.claims import ClaimSpec
from shared.report.paper_hook import PaperResults

ARM = "evomoe"  # the arm whose scale a verdict is reached at


def parameters(record: dict[str, Any]) -> tuple[int, int]:
    """(all parameters, those one token uses) of the record's model: one expert per MoE layer for the top-1 arms
    (EvoMoE once its dense phase is over), two half-width ones for GShard (charbench.active_parameters)."""
    from omegaconf import OmegaConf

    from replications.evomoe import REPLICATION

    return charbench.active_parameters(model_from_record(REPLICATION, record), OmegaConf.create(record["config"]))


def scale(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, Any]:
    return lm_scale(results, dataset, ARM, parameters)


def speed_rows(model: dict[str, Any], reference: dict[str, Any]) -> list[dict[str, Any]]:
    """speedup.seed_rows with each seed's ratio (a censored bound, at most 1, where the target was not reached)."""
    rows = speedup.seed_rows(model, reference)
    for r in rows:
        r["reached"] = r["model_steps"] is not None
        r["ratio"] = (r["reference_steps"] / r["model_steps"] if r["reached"]
                      else min(1.0, r["reference_steps"] / r["model_last_step"]))
    return rows


def steps_to_switch(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> dict[str, dict[Any, float]] | str:
    """The steps_to_target samples: {"speedup": {seed: ratio}, "censored": {seed: 1.0 where never reached}}."""
    model, reference = spec.arms
    found = {arm: results.record(dataset, arm) for arm in (model, reference)}
    missing = [arm for arm, record in found.items() if record is None]
    if missing:
        return f"no record of {', '.join(missing)} on {dataset}: make replicate-evomoe dataset={dataset}"
    rows = speed_rows(found[model], found[reference])
    budget = (spec.judge.get("options") or {}).get("budget")
    last = {r["model_last_step"] for r in rows}
    if last != {budget}:  # "not reached in <budget> steps" must be the runs' length: a smoke run is not the protocol
        return (f"the {dataset} runs end at step {'/'.join(map(str, sorted(last)))}, not the protocol's {budget} "
                f"(judge.options.budget): run the full protocol, make replicate-evomoe dataset={dataset}")
    return {"speedup": {r["seed"]: r["ratio"] for r in rows},
            "censored": {r["seed"]: float(not r["reached"]) for r in rows}}


@functools.lru_cache(maxsize=4)
def _bigram(batch_size: int, steps: int, seq_len: int) -> dict[str, float]:
    from replications.evomoe.ngram import kneser_ney_bigram_ppl
    from replications.moe import wikitext
    from replications.moe.lmtrain import batchify

    corpus = wikitext.load()
    V = len(corpus.vocab)
    seen = batchify(corpus.train, batch_size)[:, : steps * seq_len + 1]
    return {"valid_ppl": kneser_ney_bigram_ppl(seen, corpus.valid, V), "test_ppl": kneser_ney_bigram_ppl(seen, corpus.test, V),
            "test_ppl_full_train": kneser_ney_bigram_ppl(corpus.train, corpus.test, V)}


def wikitext_bigram(records: dict[str, dict[str, Any]]) -> dict[str, float]:
    """The count-based bigram's valid/test perplexity (ngram.py) fitted on exactly the training tokens the models
    read (batchify streams, steps x seq_len + 1 tokens each), and its test PPL on the full train set. Without the
    data this raises DataError (the shared report then keeps the existing page: judging without the floor would
    turn "not testable here" into a verdict the floor forbids)."""
    p = next(iter(records.values()))["config"]["paper"]["protocol"]
    return _bigram(p["batch_size"], p["steps"], p["seq_len"])


def beats_bigram(results: PaperResults, dataset: str | None, spec: ClaimSpec) -> str | None:
    """The WikiText-2 precondition: some model of the protocol beats the bigram of the same tokens on test
    perplexity (None: it holds; other datasets: None), else why the claim is not testable there."""
    records = results.models(dataset) if dataset == "wikitext2" else {}
    if not records:
        return None
    bigram = wikitext_bigram(records)
    if min(r["aggregate"]["test_ppl"]["mean"] for r in records.values()) < bigram["test_ppl"]:
        return None
    return (f"every model is still worse than a count-based bigram of the same tokens (test PPL {bigram['test_ppl']:.1f}), "
            "so this comparison says nothing about the paper's regime (GPT-MoE 1.5B on OpenWebText)")
