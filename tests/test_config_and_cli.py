"""Every real config composes; bad choices and keys fail with a message that names the fix."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

import replications
from shared.runner import ConfigError, check_choices
from tests.conftest import CONF, compose_cfg


def _plans():
    for paper in replications.available():
        plan = OmegaConf.load(CONF / "paper" / f"{paper}.yaml")
        for dataset in plan.datasets:
            for model in plan.models:
                yield paper, dataset, model


@pytest.mark.parametrize("paper,dataset,model", list(_plans()))
def test_every_paper_config_composes(paper, dataset, model):
    choice = f"{paper}/{dataset}" if model == paper else model
    overrides = [f"paper={paper}", f"dataset={dataset}", "scale=smoke", "tracker=none"]
    if (CONF / "model" / f"{choice}.yaml").exists():
        cfg = compose_cfg(*overrides, f"model={choice}")
        check_choices(cfg)
        assert cfg.paper.name == paper and cfg.dataset.name == dataset
    else:  # a model a paper lists must have a config, unless the paper maps it itself
        cfg = compose_cfg(*overrides)
        assert cfg.paper.name == paper


def test_every_paper_package_exposes_a_replication():
    import inspect

    for paper in replications.available():
        rep = replications.get(paper)
        assert rep.paper_file.exists(), f"{paper}: paper.yaml missing"
        # one interface: evaluate sees train's summary, the page comes from report(), no state on the object
        params = list(inspect.signature(rep.evaluate).parameters)
        assert len(params) == 5 and params[0] == "run" and params[-1] == "summary", (paper, params)
        assert not hasattr(rep, "after_replicate") and vars(rep) == {}, paper


def test_unknown_paper_lists_valid_names():
    with pytest.raises(KeyError, match="pshgcn"):
        replications.get("no_such_paper")
    with pytest.raises(ConfigCompositionException, match="pshgcn"):
        compose_cfg("paper=no_such_paper")


def test_dataset_of_another_paper_is_refused_with_the_valid_list():
    cfg = compose_cfg("paper=pshgcn", "dataset=dblp")
    cfg.dataset.name = "tolokers"
    with pytest.raises(ConfigError, match="valid: dblp, acm, imdb, aminer"):
        check_choices(cfg)


def test_wrong_config_key_is_named():
    with pytest.raises(ConfigCompositionException, match="model.learning_rat"):
        compose_cfg("paper=pshgcn", "dataset=dblp", "model.learning_rat=0.1")


def test_cli_reports_unknown_dataset():
    out = subprocess.run([sys.executable, "-m", "replications", "paper=pshgcn", "dataset=nope"],
                         capture_output=True, text=True, timeout=120)
    # one line naming the paper's datasets (Hydra's own report: 39 lines listing every dataset of every paper, exit 1)
    valid = ", ".join(OmegaConf.load(CONF / "paper" / "pshgcn.yaml").datasets)
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [
        f"error: paper 'pshgcn' has no dataset 'nope'; valid: {valid}"], out.stderr
