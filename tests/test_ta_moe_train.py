"""TA-MoE's protocol on a tiny synthetic stream: every step's dispatch matrix is recorded and consistent with
the gate, the same seed gives the same numbers, the topology matrix follows the bandwidths, the report and
the all-to-all replay run; and one smoke run on the mirror."""

from __future__ import annotations

import json
import math

import pytest
import torch

from replications.moe.wikitext import Corpus
from replications.ta_moe import REPLICATION, report
from replications.ta_moe.topology import bandwidth_matrix, resolve, topology_from_bandwidth
from replications.ta_moe.train import fit, off_node_fraction
from shared.runner import run
from shared.seeding import seed_everything
from tests.conftest import compose_cfg, needs_mirror

TINY = ["paper=ta_moe", "dataset=wikitext2", "scale=smoke", "tracker=none", "paper.protocol.steps=8",
        "scale.max_epochs=null", "paper.protocol.batch_size=8", "paper.protocol.seq_len=8",
        "paper.protocol.d_model=16", "paper.protocol.heads=2", "paper.protocol.layers=1",
        "paper.protocol.warmup_steps=2", "paper.protocol.cutoffs=[20,40]", "paper.protocol.curve_points=4",
        "paper.protocol.curve_valid_tokens=64", "model.ffn_hidden=32"]


def tiny_corpus() -> Corpus:
    g = torch.Generator().manual_seed(0)
    return Corpus([f"w{i}" for i in range(60)], torch.randint(0, 60, (4000,), generator=g),
                  torch.randint(0, 60, (500,), generator=g), torch.randint(0, 60, (500,), generator=g))


def train_tiny(choice: str, seed: int = 1, *over: str):
    cfg = compose_cfg(*TINY, f"model={choice}", *over)
    data = tiny_corpus()
    seed_everything(seed)
    model = REPLICATION.build_model(cfg, data)
    return fit(cfg, model, data.train, data.valid, lambda m, s: None), model, cfg


def test_topology_matrix_weighs_each_destination_by_its_transfer_cost():
    B = bandwidth_matrix(2, 2, 8000, 400)
    assert B[0] == [8000, 8000, 400, 400] and B[3] == [400, 400, 8000, 8000]
    T = torch.tensor(topology_from_bandwidth(B))
    s = torch.softmax(T[0], 0)  # the TA loss's per-destination weight (times W^2)
    inv = torch.tensor([1 / 8000, 1 / 8000, 1 / 400, 1 / 400])
    torch.testing.assert_close(s, inv / inv.sum())
    cluster = {"nodes": 2, "ranks_per_node": 2, "intra_mbit": 8000, "inter_mbit": 400, "bandwidth_file": "nope.json"}
    assert resolve(cluster, __import__("pathlib").Path("/nonexistent"))["source"] == "config"


def test_measured_bandwidths_replace_the_config_values(tmp_path):
    (tmp_path / "comm.json").write_text(json.dumps({"measured_mbit": {"intra": 9000.0, "inter": 380.0}}))
    r = resolve({"nodes": 2, "ranks_per_node": 2, "intra_mbit": 1, "inter_mbit": 1, "bandwidth_file": "comm.json"},
                tmp_path)
    assert r["source"].startswith("measured") and r["bandwidth_mbit"][0] == [9000.0, 9000.0, 380.0, 380.0]


@pytest.mark.parametrize("choice", ["ta_moe/wikitext2", "ta_moe_gshard", "ta_moe_fastermoe"])
def test_every_arm_trains_and_records_each_steps_dispatch(choice):
    summary, model, cfg = train_tiny(choice)
    nll = [p["train_nll"] for p in summary["curve"]]
    assert all(math.isfinite(v) for v in nll)
    d = torch.tensor(summary["dispatch"])  # [steps, layers, source rank, destination rank]
    assert d.shape == (8, 1, 4, 4)
    rows = 8 * 8 // 4  # tokens per rank per step
    assert (d.sum(-1) <= 2 * rows).all()  # at most top-2 per token, kept ones only
    # rank 0 fills the receiving-side capacity first (official rank order): none of its tokens is dropped here
    assert (d[..., 0, :].sum(-1) == 2 * rows).all()
    if choice == "ta_moe_fastermoe":  # no capacity: every token keeps both choices
        assert (d.sum(-1) == 2 * rows).all()
    assert 0 <= off_node_fraction(summary["dispatch"], 2) <= 1


def test_same_seed_same_numbers_and_seeds_differ():
    a = train_tiny("ta_moe/wikitext2", 1)[0]
    b = train_tiny("ta_moe/wikitext2", 1)[0]
    c = train_tiny("ta_moe/wikitext2", 2)[0]
    assert [p["train_nll"] for p in a["curve"]] == [p["train_nll"] for p in b["curve"]]
    assert a["dispatch"] == b["dispatch"]
    assert a["curve"][-1]["train_nll"] != c["curve"][-1]["train_nll"]


def test_only_the_ta_arm_carries_a_topology():
    _, ta, _ = train_tiny("ta_moe/wikitext2", 1, "paper.protocol.steps=1")
    _, gs, _ = train_tiny("ta_moe_gshard", 1, "paper.protocol.steps=1")
    assert ta.moe_layers()[0].gate.topology is not None and gs.moe_layers()[0].gate.topology is None
    with pytest.raises(ValueError, match="topology gates"):
        REPLICATION.build_model(compose_cfg(*TINY, "model=evomoe_switch"), tiny_corpus())


@pytest.mark.slow
def test_replay_worker_runs_recorded_matrices_on_local_ranks(tmp_path):
    from replications.moe.testbed import LocalCluster

    plan = tmp_path / "plan.json"
    m = [[3, 1, 0, 2], [1, 1, 1, 1], [0, 0, 4, 0], [2, 2, 2, 2]]
    plan.write_text(json.dumps({"d_model": 8, "warmup": 1, "arms": {"a": [m, m], "b": [m]}}))
    with LocalCluster(nodes=2, ranks_per_node=2) as cluster:
        out = cluster.run("replications.ta_moe.replay_worker", args=["--plan", str(plan)], timeout_s=120)
    assert len(out[0]["a"]) == 2 and len(out[0]["b"]) == 1 and all(t > 0 for t in out[0]["a"])


@pytest.mark.slow
@needs_mirror
def test_smoke_run_on_the_mirror_writes_results_and_the_table(tmp_path, fresh_cache):
    for choice in ("ta_moe/wikitext2", "ta_moe_gshard"):
        cfg = compose_cfg("paper=ta_moe", "dataset=wikitext2", f"model={choice}", "scale=smoke", "tracker=none",
                          "scale.max_epochs=4", f"results_dir={tmp_path}")
        record = run(cfg, REPLICATION)
        assert record["complete"] and 1 < record["aggregate"]["test_ppl"]["mean"] < 33278
    assert report.main([str(tmp_path)]) == 0
    assert (tmp_path / "ta_moe" / "wikitext2_dispatch.png").stat().st_size > 0
    claims = json.loads((tmp_path / "ta_moe" / "wikitext2_claims.json").read_text())["checks"]
    assert {c["id"]: c["status"] for c in claims}["speedup"] == "not testable here"
