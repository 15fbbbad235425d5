"""Training learns a tiny planted KG; config plumbing; the harness end to end on a tiny KG; the smoke run on the
real WN18RR against its golden values."""

from __future__ import annotations

import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from replications.rep import REPLICATION, hparams, score_fn
from replications.rep.data import KG, parse_triples
from replications.rep.evaluate import filtered_metrics
from replications.rep.models import KGE
from replications.rep.train import fit, subsampling_weights
from shared.data import DataError
from shared.paths import REPO_ROOT
from shared.runner import run, stored
from shared.smoke import apply_smoke
from tests.conftest import needs_mirror
from tests.golden import check_golden
from tests.runs import run_of

HP = OmegaConf.create({"lr": 0.02, "lr_decay_at": 0.0, "batch_size": 64, "negatives": 32,
                       "adversarial_temperature": 1.0, "regularization": 0.0})


def planted_kg(n: int = 40) -> tuple[torch.Tensor, torch.Tensor]:
    """Two 'successor' relations on a line (no wrap-around, so TransE can fit it); 20% held out."""
    triples = torch.tensor([(h, r, h + s) for r, s in enumerate((1, 3)) for h in range(n - s)])
    perm = torch.randperm(len(triples), generator=torch.Generator().manual_seed(0))
    return triples[perm], triples


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["transe", "rotate", "complex"])
def test_tiny_kg_is_learned(kind: str) -> None:
    torch.manual_seed(0)
    shuffled, everything = planted_kg()
    cut = int(0.8 * len(shuffled))
    train, held_out = shuffled[:cut], shuffled[cut:]
    model = KGE(kind, 40, 2, 32, 4.0)
    untrained = filtered_metrics(score_fn(model, model.entity.detach()), held_out, everything)["mrr"]
    fit(model, train, HP, 1500, seed=0, log=lambda m, s: None)
    learned = filtered_metrics(score_fn(model, model.entity.detach()), train, everything)
    assert untrained < 0.3
    assert learned["mrr"] > 0.9, learned


def test_same_seed_same_embeddings() -> None:
    train, _ = planted_kg()
    tables = []
    for _ in range(2):
        torch.manual_seed(3)
        model = KGE("distmult", 40, 2, 8, 4.0)
        fit(model, train, HP, 30, seed=3, log=lambda m, s: None)
        tables.append(model.entity.detach().clone())
    assert torch.equal(tables[0], tables[1])


def test_subsampling_weights_hand_case() -> None:
    # (0, 0) appears twice as (h, r); tail 1 appears once with r=0, tail 2 once. The official count_frequency:
    # count[(0, 0)] = 4 then 5; count[(1, -1)] = count[(2, -1)] = 4 -> weight 1/sqrt(5 + 4) for both triples.
    w = subsampling_weights(torch.tensor([[0, 0, 1], [0, 0, 2]]))
    assert torch.allclose(w, torch.tensor([(5 + 4) ** -0.5] * 2))


def test_parse_rejects_malformed_lines(tmp_path) -> None:
    paths = {}
    for split in ("train", "valid", "test"):
        paths[split] = tmp_path / f"{split}.txt"
        paths[split].write_text("a\tr\tb\n")
    splits, n_ent, n_rel = parse_triples(paths)
    assert (n_ent, n_rel) == (2, 1) and splits["test"].tolist() == [[0, 0, 1]]
    paths["valid"].write_text("a\tr\n")
    with pytest.raises(DataError, match="3 tab-separated"):
        parse_triples(paths)


def compose_cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        return compose("config", overrides=["paper=rep", "tracker=none", *overrides])


def test_configs_compose_and_override() -> None:
    cfg = compose_cfg("dataset=wn18rr", "model=rep_transe")
    hp = hparams(cfg)
    assert (hp["alpha"], hp["khop"], hp["neighbor_norm"]) == (0.7, 16, True)  # official README, WN18RR TransE
    cfg = compose_cfg("dataset=fb15k_237", "model=rep_rotate", "model.alpha=0.5")
    assert hparams(cfg)["alpha"] == 0.5 and hparams(cfg)["khop"] == 8
    assert compose_cfg("dataset=fb15k_237").model.name == "rotate"  # conf/model/rep/<dataset>.yaml
    with pytest.raises(ValueError, match="not a hyperparameter"):
        hparams(compose_cfg("dataset=fb15k_237", "model=rep_rotate", "+model.alhpa=0.5"))


def test_harness_end_to_end_on_tiny_kg(monkeypatch) -> None:
    shuffled, _ = planted_kg()
    kg = KG("fb15k_237", 40, 2, shuffled[:56], shuffled[56:66], shuffled[66:])
    monkeypatch.setattr("replications.rep.load", lambda name: kg)
    cfg = compose_cfg("dataset=fb15k_237", "model=rep_distmult", "scale=smoke", "model.cache=false",
                      "model.dim=8")
    run = run_of(cfg)
    data = REPLICATION.load_data(run)
    torch.manual_seed(1)
    model = REPLICATION.build_model(run, data)
    summary = REPLICATION.train(run, model, data, 1, lambda m, s: None)
    # 2 steps an epoch: validation every step; the planted validation MRR peaks early and patience (6) stops it
    assert summary["stopped"] == "patience" and summary["steps"] < cfg.scale.max_epochs
    assert summary["rep"]["khop"] == 19 and len(summary["validation"]) == summary["steps"]
    assert summary["_rep_entity"].shape == model.entity.shape and not hasattr(model, "rep_entity")
    assert not any(k.startswith("_") for k in stored(summary)) and "rep_seconds" in stored(summary)
    metrics = REPLICATION.evaluate(run, model, data, 1, summary)
    assert {"val_mrr_base", "test_mrr_rep", "test_hits10_delta"} <= metrics.keys()
    # REP and the test evaluation get the best-validation embeddings (not the last ones)
    assert metrics["val_mrr_base"] == summary["best_val_mrr"] == max(p["val_mrr"] for p in summary["validation"])
    assert abs(metrics["test_mrr_delta"] - (metrics["test_mrr_rep"] - metrics["test_mrr_base"])) < 1e-12
    # evaluate ranks with the embeddings train handed it: an identity "propagation" gives rep == base
    same = REPLICATION.evaluate(run, model, data, 1, {**summary, "_rep_entity": model.entity.detach()})
    assert same["test_mrr_rep"] == same["test_mrr_base"] and same["test_mrr_delta"] == 0
    assert vars(REPLICATION) == {}  # no per-run state on the module-level object


@pytest.mark.slow
@needs_mirror
def test_smoke_run_on_the_mirror_matches_the_golden_values(tmp_path, fresh_cache) -> None:
    """DistMult + REP at scale=smoke on the real WN18RR through the runner (seconds): its metrics equal
    tests/golden/rep.json. No metric is left out: the record's metrics are ranks only, no timings."""
    cfg = compose_cfg("dataset=wn18rr", "model=rep_distmult", "scale=smoke", f"paths.results_dir={tmp_path}")
    apply_smoke(cfg)
    record = run(cfg, REPLICATION)
    assert record["complete"] and (tmp_path / "rep" / "wn18rr" / "distmult.json").exists()
    means = {m: a["mean"] for m, a in record["aggregate"].items()}
    check_golden("rep", f"{record['dataset']}/{record['model']}", means)
