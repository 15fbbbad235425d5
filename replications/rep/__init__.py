"""REP (Wang et al., IJCAI 2022) on TransE / DistMult / ComplEx / RotatE base embeddings.

One run = one (dataset, base model) over seeds: train the base model (the 1-vs-all recipe: early stopping on
the validation MRR, the best-validation embeddings kept; resumable from its checkpoints in the cache), evaluate
it (filtered, head and tail prediction), apply REP with the official per-dataset alpha / khop, evaluate again. Metrics are
fractions as the paper prints them: ``{val,test}_{mrr,mr,hits1,hits3,hits10}_{base,rep}`` and the
change ``test_*_delta`` = rep - base. Training and REP wall times are in each run's train summary; the
propagated embeddings reach evaluate as the summary's private ``_rep_entity`` (never stored). report() returns
the before/after page as data (replications/rep/report.py).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from replications.rep.data import KG, load
from replications.rep.evaluate import filtered_metrics
from replications.rep.models import KGE
from replications.rep.paired import metrics_of, paired_mrr_change, triple_ranks
from replications.rep.propagate import rep
from replications.rep.train import steps_per_epoch, train_or_load
from shared.replication import LogFn, Replication, Run
from shared.report.paper_hook import PaperReport, PaperResults

RESERVED = {"name", "kind", "cache", "per_dataset"}
REP_KEYS = ("alpha", "khop", "neighbor_norm", "degree_w")
RUN_ONLY_KEYS = ("checkpoint_minutes",)  # change how a run is kept, never its embeddings (resume is bit-identical)


def hparams(cfg: DictConfig) -> dict[str, Any]:
    """The model's per-dataset table, with any non-null top-level key (e.g. model.alpha=0.9) overriding it."""
    table = cfg.model.per_dataset.get(cfg.dataset.name)
    if table is None:
        raise ValueError(f"model '{cfg.model.name}' has no hyperparameters for dataset '{cfg.dataset.name}'; "
                         f"valid: {', '.join(cfg.model.per_dataset)}")
    hp = OmegaConf.to_container(table, resolve=True)
    for key, value in cfg.model.items():
        if key not in RESERVED and value is not None:
            if key not in hp:
                raise ValueError(f"model.{key} is not a hyperparameter of {cfg.model.name}; valid: {', '.join(hp)}")
            hp[key] = value
    return hp


def base_steps(hp: dict[str, Any], num_train: int) -> int:
    """Optimiser steps of the base model: ``steps``, or ``epochs`` full passes of the 1-vs-all recipe."""
    if hp.get("epochs") is not None:
        return int(hp["epochs"] * steps_per_epoch(num_train, int(hp["batch_size"])))
    return int(hp["steps"])


def score_fn(model: KGE, entity: torch.Tensor):
    rel = model.relation.detach()

    def scores(anchor: torch.Tensor, r: torch.Tensor, direction: int) -> torch.Tensor:
        return model.rank_scores(model.context(entity, rel, anchor, r, direction), entity)

    return scores


def eval_limit(cfg: DictConfig) -> int | None:
    """scale=smoke ranks the first queries only (a pipeline check; every filter still uses all true triples)."""
    return cfg.paper.protocol.get("smoke_eval_queries") if cfg.scale.name == "smoke" else None


def validator(run: Run, model: KGE, data: KG):
    """Early stopping's validation MRR of the model's current embeddings (filtered, head and tail prediction, the
    evaluator ``evaluate`` uses); None for OGB datasets (their recipe has no early stopping)."""
    if data.evaluator is not None:
        return None
    known, queries = data.all_true(), data.valid[:eval_limit(run.cfg)]

    def validate() -> float:
        with torch.no_grad():
            return filtered_metrics(score_fn(model, model.entity.detach()), queries, known)["mrr"]

    return validate


class REPReplication(Replication):
    name = "rep"
    paper_file = Path(__file__).with_name("paper.yaml")

    def load_data(self, run: Run) -> KG:
        return load(run.dataset)

    def build_model(self, run: Run, data: KG) -> KGE:
        hp = hparams(run.cfg)
        return KGE(run.cfg.model.kind, data.num_entities, data.num_relations, hp["dim"], hp.get("gamma", 0.0),
                   reciprocal=bool(hp.get("reciprocal", False)), init_scale=hp.get("init_scale"),
                   distance=hp.get("distance") or "l2").to(run.device)

    def train(self, run: Run, model: KGE, data: KG, seed: int, log: LogFn) -> dict[str, Any]:
        cfg = run.cfg
        hp = hparams(cfg)
        steps = base_steps(hp, len(data.train))
        if cfg.scale.max_epochs is not None:  # scale=smoke: caps optimiser steps (either recipe)
            steps = min(steps, int(cfg.scale.max_epochs))
        # what shapes the base embeddings (the cache and checkpoint key): not REP's keys, not how often it checkpoints
        base_hp = {k: v for k, v in hp.items() if k not in REP_KEYS and k not in RUN_ONLY_KEYS}
        summary = train_or_load(model, cfg.dataset.name, data.train, OmegaConf.create(hp), base_hp, steps, seed,
                                log, bool(cfg.model.cache), validator(run, model, data))
        started = time.perf_counter()
        summary["_rep_entity"] = rep(model, data.train.to(model.entity.device), hp["alpha"], int(hp["khop"]),
                                     bool(hp["neighbor_norm"]), hp["degree_w"])
        summary["rep_seconds"] = round(time.perf_counter() - started, 3)
        summary["rep"] = {k: hp[k] for k in REP_KEYS}
        summary["rep_over_train"] = round(summary["rep_seconds"] / summary["train_seconds"], 4)
        return summary

    def evaluate(self, run: Run, model: KGE, data: KG, seed: int, summary: dict[str, Any]) -> dict[str, float]:
        cfg = run.cfg
        known = data.all_true()
        limit = eval_limit(cfg)
        out: dict[str, float] = {}
        test_ranks = {}
        with torch.no_grad():
            for stage, entity in (("base", model.entity.detach()), ("rep", summary["_rep_entity"])):
                for split, queries in (("val", data.valid), ("test", data.test)):
                    if data.evaluator is not None:
                        from replications.rep.ogb import ogb_metrics
                        metrics = ogb_metrics(model, entity, data, "valid" if split == "val" else "test")
                    elif split == "test":  # per triple, for REP's paired interval below
                        test_ranks[stage] = triple_ranks(score_fn(model, entity), queries[:limit], known)
                        metrics = metrics_of(test_ranks[stage])
                    else:
                        metrics = filtered_metrics(score_fn(model, entity), queries[:limit], known)
                    out |= {f"{split}_{k}_{stage}": v for k, v in metrics.items()}
        for k in ("mrr", "hits1", "hits3", "hits10"):
            if f"test_{k}_rep" in out:
                out[f"test_{k}_delta"] = out[f"test_{k}_rep"] - out[f"test_{k}_base"]
        if test_ranks:  # an interval, not a metric: kept in the run's summary, which the record stores after evaluate
            summary["test_mrr_change"] = paired_mrr_change(test_ranks["base"], test_ranks["rep"])
        return out

    def report(self, results: PaperResults) -> PaperReport | None:
        """results/rep/README.md as data: before/after REP with wall times, the base recipes' measured cost, the claims."""
        from replications.rep import report

        return report.build(results)


REPLICATION = REPReplication()
