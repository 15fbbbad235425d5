"""The Tiny Shakespeare scale ladder (issue 40): every rung composes for every MoE paper with its widths following
d_model, trains on the corpus it names, and the plateau summary reads a curve as hand-computed."""

from __future__ import annotations

import math

import pytest
from omegaconf import OmegaConf

from replications.moe import corpora
from replications.moe.plateau import plateau
from shared.paths import REPO_ROOT
from tests.conftest import compose_cfg

RUNGS = {"tinyshakespeare_2x64": (2, 64, 2), "tinyshakespeare": (4, 128, 4), "tinyshakespeare_6x192": (6, 192, 6)}
ARMS = {"evomoe": {"evomoe": 4, "evomoe_dense": 4, "evomoe_switch": 4}, "ta_moe": {"ta_moe": 2, "ta_moe_gshard": 2},
        "flexmoe": {"flexmoe": 4, "flexmoe_gshard_e8": 2}}


@pytest.mark.parametrize("paper", sorted(ARMS))
@pytest.mark.parametrize("rung", sorted(RUNGS))
def test_every_rung_composes_with_widths_following_d_model(paper, rung):
    layers, d, heads = RUNGS[rung]
    plan = OmegaConf.load(REPO_ROOT / "conf" / "paper" / f"{paper}.yaml")
    assert rung in plan.datasets
    for arm, ratio in ARMS[paper].items():
        choice = f"{paper}/{rung}" if arm == paper else arm
        cfg = compose_cfg(f"paper={paper}", f"dataset={rung}", f"model={choice}", "tracker=none")
        p = cfg.paper.protocol
        assert (p.layers, p.d_model, p.heads, p.steps, p.batch_size, p.seq_len) == (layers, d, heads, 2000, 12, 64)
        assert cfg.model.ffn_hidden == ratio * d  # 512 / 256 at d128, as the committed 4 x d128 records
        assert corpora.corpus_of(cfg.dataset) == "tinyshakespeare" and cfg.dataset.name == rung


def test_a_rung_runs_the_arms_its_claims_compare():
    for paper in ARMS:
        plan = OmegaConf.load(REPO_ROOT / "conf" / "paper" / f"{paper}.yaml").replicate.models_for
        assert set(plan["tinyshakespeare_2x64"]) == set(plan["tinyshakespeare_6x192"]) == set(ARMS[paper])


def test_an_unknown_corpus_is_refused_in_one_line():
    with pytest.raises(ValueError, match="evomoe has no loader for dataset 'tinyshakespeare_9x9'; valid: wikitext2"):
        corpora.load_for({"name": "tinyshakespeare_9x9", "corpus": "tinyshakespeare"}, "evomoe", ["wikitext2"])


def test_plateau_reads_the_last_two_quarters_by_hand():
    # losses 3.0 (step 1), 2.4 (1000), 2.2 (1500), 2.1 (2000): third quarter -0.2, last -0.1
    curve = [{"step": s, "valid_ppl_subset": math.exp(v)} for s, v in ((1, 3.0), (1000, 2.4), (1500, 2.2), (2000, 2.1))]
    out = plateau({"runs": [{"train": {"curve": curve}}]})
    assert out == pytest.approx({"end": 2.1, "tail_fall": 0.1, "fall_before": 0.2})


def test_the_cost_and_plateau_commands_run_at_tiny_size(tmp_path, capsys):
    """The commands the rung headers quote: ladder_cost (one step of one paper's smallest rung) and plateau."""
    from replications.moe import ladder_cost
    from replications.moe import plateau as plateau_cmd

    out = tmp_path / "cost.json"
    assert ladder_cost.main(["--steps", "1", "--papers", "ta_moe", "--rungs", "tinyshakespeare_2x64",
                             "--out", str(out)]) == 0
    import json

    rows = json.loads(out.read_text())["arms"]
    assert [r["model"] for r in rows] == ["ta_moe", "gshard"] and all(r["size"] == "2x64" for r in rows)
    assert plateau_cmd.main([]) == 0 and "tinyshakespeare_2x64" in capsys.readouterr().out
