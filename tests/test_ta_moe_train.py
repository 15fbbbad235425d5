"""TA-MoE's protocol on a tiny synthetic stream: every step's dispatch matrix is recorded and consistent with
the gate, the same seed gives the same numbers, the topology matrix follows the bandwidths, train hands
evaluate what it needs through the summary, the claims get their statuses from shared.verdict, the page builds
from hand-made records, the all-to-all replay runs; and one smoke run on the mirror."""

from __future__ import annotations

import json
import math

import pytest
import torch

from replications.moe.wikitext import Corpus
from replications.ta_moe import REPLICATION, report
from replications.ta_moe.topology import bandwidth_matrix, resolve, topology_from_bandwidth
from replications.ta_moe.train import fit, off_node_fraction
from shared.report.paper_hook import PaperResults, load_paper_results
from shared.runner import run
from shared.seeding import seed_everything
from tests.conftest import compose_cfg, needs_mirror
from tests.golden import check_golden
from tests.runs import run_of

TINY = ["paper=ta_moe", "dataset=wikitext2", "scale=smoke", "tracker=none", "paper.protocol.steps=8",
        "scale.max_epochs=null", "paper.protocol.batch_size=8", "paper.protocol.seq_len=8",
        "paper.protocol.d_model=16", "paper.protocol.heads=2", "paper.protocol.layers=1",
        "paper.protocol.warmup_steps=2", "paper.protocol.cutoffs=[20,40]", "paper.protocol.curve_points=4",
        "paper.protocol.curve_valid_tokens=64", "model.ffn_hidden=32"]

# Golden smoke values (tests/golden/ta_moe.json): every metric of the smoke record but train_tokens_per_s, a
# wall-clock throughput (2-5% apart between two runs); the rest was bit-identical.
LEFT_OUT = {"train_tokens_per_s"}


def tiny_corpus() -> Corpus:
    g = torch.Generator().manual_seed(0)
    return Corpus([f"w{i}" for i in range(60)], torch.randint(0, 60, (4000,), generator=g),
                  torch.randint(0, 60, (500,), generator=g), torch.randint(0, 60, (500,), generator=g))


def train_tiny(choice: str, seed: int = 1, *over: str):
    cfg = compose_cfg(*TINY, f"model={choice}", *over)
    data = tiny_corpus()
    seed_everything(seed)
    model = REPLICATION.build_model(run_of(cfg), data)
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
        REPLICATION.build_model(run_of(compose_cfg(*TINY, "model=evomoe_switch")), tiny_corpus())


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
def test_smoke_run_on_the_mirror_writes_results_and_the_page(tmp_path, fresh_cache):
    for choice in ("ta_moe/wikitext2", "ta_moe_gshard"):
        cfg = compose_cfg("paper=ta_moe", "dataset=wikitext2", f"model={choice}", "scale=smoke", "tracker=none",
                          "scale.max_epochs=4", f"paths.results_dir={tmp_path}")
        record = run(cfg, REPLICATION)
        assert record["complete"] and 1 < record["aggregate"]["test_ppl"]["mean"] < 33278
        assert len(record["runs"][0]["train"]["dispatch"]) == 4  # every step's matrices reach the record
        means = {m: a["mean"] for m, a in record["aggregate"].items() if m not in LEFT_OUT}
        check_golden("ta_moe", f"{record['dataset']}/{record['model']}", means)
    page = REPLICATION.report(load_paper_results(tmp_path, "ta_moe"))
    statuses = [c.status for c in page.claims]
    assert statuses[0] == "not testable here" and statuses[1] == "not run"  # no replay.json beside smoke results
    assert page.figures()[0].draw().get_axes()


def test_train_hands_evaluate_the_dispatch_through_the_summary():
    cfg = compose_cfg(*TINY, "model=ta_moe/wikitext2", "paper.protocol.smoke_eval_tokens=64")
    run_ = run_of(cfg)
    data = tiny_corpus()
    seed_everything(1)
    model = REPLICATION.build_model(run_, data)
    summary = REPLICATION.train(run_, model, data, 1, lambda m, s: None)
    assert not hasattr(REPLICATION, "_summary") and not hasattr(REPLICATION, "_cluster")
    assert summary["cluster"]["source"] in ("config", "measured: links.json") and len(summary["dispatch"]) == 8
    metrics = REPLICATION.evaluate(run_, model, data, 1, summary)
    assert metrics["off_node_fraction"] == pytest.approx(off_node_fraction(summary["dispatch"], 2))
    assert metrics["off_node_fraction_last10pct"] == pytest.approx(off_node_fraction(summary["dispatch"][-1:], 2))
    assert metrics["dropped_fraction"] == summary["mean_dropped_fraction"] and math.isfinite(metrics["test_ppl"])


# Hand-made records: 2 x 2 ranks, 10 steps of one layer; `near` of each rank's 8 kept assignments stay on its node.
def dispatch(near: int) -> list[list[list[list[int]]]]:
    far = 8 - near
    m = [[near // 2, near - near // 2, far // 2, far - far // 2], [near // 2, near - near // 2, far // 2, far - far // 2],
         [far // 2, far - far // 2, near // 2, near - near // 2], [far // 2, far - far // 2, near // 2, near - near // 2]]
    return [[m] for _ in range(10)]


def hand_record(model: str, ppl: dict[int, float], near: int) -> dict:
    off = off_node_fraction(dispatch(near), 2)
    cluster = {"intra_mbit": 8000.0, "inter_mbit": 400.0, "source": "config"}
    runs = [{"seed": s, "metrics": {"test_ppl": v, "off_node_fraction_last10pct": off},
             "train": {"dispatch": dispatch(near), "cluster": cluster, "steps": 10, "train_tokens": 160}}
            for s, v in ppl.items()]
    agg = {k: {"mean": 1.0, "std": 0.0, "n": len(runs), "ci95_low": 1.0, "ci95_high": 1.0}
           for k in ("valid_ppl", "test_ppl", "off_node_fraction", "off_node_fraction_last10pct",
                     "local_rank_fraction", "dropped_fraction", "train_tokens_per_s")}
    protocol = {"batch_size": 4, "seq_len": 4, "layers": 2, "d_model": 128, "cluster": {"ranks_per_node": 2}}
    return {"dataset": "wikitext2", "model": model, "complete": True, "runs": runs, "aggregate": agg,
            "wall_seconds": 60.0, "environment": {"hardware": {"cpu": "test cpu", "torch_threads": 1}},
            "config": {"paper": {"protocol": protocol}}}


@pytest.fixture
def sized(monkeypatch):
    """Hand-made records carry no model config: their scale is planted (measures.parameters builds the model)."""
    from replications.ta_moe import measures

    monkeypatch.setattr(measures, "parameters", lambda record: (5_640_000, 5_370_000))


def replay_file(ta_ms: float, gs_ms: float) -> dict:
    rows = [{"arm": arm, "d_model": w, "matrices": 40, "mean_ms": ms * (w / 128), "median_ms": ms * (w / 128),
             "seconds": [ms * (w / 128) * 1e-3 * (1 + 0.01 * (i % 5)) for i in range(40)]}
            for w in (128, 1024) for arm, ms in (("ta_moe", ta_ms), ("gshard", gs_ms))]
    return {"testbed": {"nodes": 2, "ranks_per_node": 2, "inter_rate_mbit": 400.0}, "steps_per_seed": 10,
            "measured_mbit": {"intra": 9000.0, "inter": 390.0}, "rows": rows}


def judged(tmp_path, records: dict, replay: dict | None = None, links: dict | None = None) -> dict:
    """{claim id: Claim} of paper.yaml's specs on WikiText-2 records, the side files written beside them."""
    from shared.claims import paper_claims

    folder = tmp_path / "ta_moe"
    folder.mkdir(exist_ok=True)
    for name, side in (("replay.json", replay), ("links.json", links)):
        (folder / name).unlink(missing_ok=True)
        if side is not None:
            (folder / name).write_text(json.dumps(side))
    results = PaperResults("ta_moe", folder, {("wikitext2", m): r for m, r in records.items()})
    return {c.id: c for c in paper_claims(report.PAPER, results) if c.dataset in (None, "wikitext2")}


def test_claim_statuses_from_hand_made_records(tmp_path, sized):
    ta = hand_record("ta_moe", {1: 100.0, 2: 101.0, 3: 100.5}, near=7)
    gs = hand_record("gshard", {1: 100.2, 2: 100.8, 3: 100.6}, near=4)
    by = judged(tmp_path, {"ta_moe": ta, "gshard": gs}, replay_file(1.0, 5.0), {"measured_mbit": {"inter": 400.0}})
    assert by["speedup"].status == "not testable here"
    assert by["a2a"].status == "supported" and by["a2a"].interval[1] < 1  # TA's all-to-all 5x shorter
    assert "modelled, not measured" in by["a2a"].evidence and by["a2a"].reached_scale["active_params"] == 5_370_000
    # a loss within the 2% margin (+2.0 PPL) with an interval inside it: no loss of accuracy, supported
    acc = by["accuracy_wikitext2"]
    assert acc.status == "supported" and acc.interval[1] <= 0.02 * 100.5333 and "effect <= 2.01067" in acc.evidence
    assert by["ladder"].status == "supported" and by["ladder"].effect == pytest.approx(1 / 8 - 1 / 2)
    worse = hand_record("ta_moe", {1: 120.0, 2: 121.0, 3: 122.0}, near=2)  # 20 PPL worse, more off-node
    by = judged(tmp_path, {"ta_moe": worse, "gshard": gs}, replay_file(5.0, 1.0))
    assert [c.status for c in by.values()][1:] == ["contradicted", "contradicted", "contradicted"]
    noisy = hand_record("ta_moe", {1: 95.0, 2: 110.0, 3: 100.0}, near=7)  # the interval straddles the margin
    assert judged(tmp_path, {"ta_moe": noisy, "gshard": gs})["accuracy_wikitext2"].status == "inconclusive"
    by = judged(tmp_path, {"ta_moe": ta})
    assert [c.status for c in by.values()] == ["not testable here", "not run", "not run", "not run"]
    assert "has not run" in by["a2a"].evidence and "no record of gshard on wikitext2" in by["ladder"].evidence


def test_the_replay_ratio_needs_its_interval_below_one_and_no_width_contradicting(tmp_path, sized):
    records = {m: hand_record(m, {1: 100.0, 2: 101.0}, near=n) for m, n in (("gshard", 4), ("ta_moe", 7))}
    same = replay_file(1.0, 1.0)
    for row in same["rows"]:  # both arms the same spread samples: the ratio's interval straddles 1
        row["seconds"] = [1e-3 * (1 + 0.1 * (i % 7)) for i in range(50)]
    assert judged(tmp_path, records, same)["a2a"].status == "inconclusive"
    assert judged(tmp_path, records, replay_file(0.5, 1.0))["a2a"].status == "supported"
    assert judged(tmp_path, records, replay_file(2.0, 1.0))["a2a"].status == "contradicted"
    narrow_slower = replay_file(1.0, 5.0)  # the widest messages support it, but the narrow ones contradict it
    for row in narrow_slower["rows"]:
        if row["d_model"] == 128:
            row["seconds"] = [t * (3 if row["arm"] == "ta_moe" else 0.2) for t in row["seconds"]]
    a2a = judged(tmp_path, records, narrow_slower)["a2a"]
    assert a2a.status == "contradicted" and a2a.interval[1] < 1 and "H=128" in a2a.evidence


def test_page_from_hand_made_records(tmp_path, sized):
    from shared.report.paper_page import render_page

    records = {("wikitext2", m): hand_record(m, {1: 100.0, 2: 101.0}, near=n)
               for m, n in (("gshard", 4), ("ta_moe", 7), ("fastermoe", 6))}
    folder = tmp_path / "ta_moe"
    folder.mkdir()
    (folder / "replay.json").write_text(json.dumps(replay_file(1.0, 5.0)))
    page = report.build(PaperResults("ta_moe", folder, records))
    assert [c.status for c in page.claims] == ["not testable here", "supported", "supported", "not run", "supported",
                                               "not run"]  # no Tiny Shakespeare records
    tables = [b for b in page.blocks if hasattr(b, "header")]
    assert [row[0] for row in tables[0].rows] == ["ta_moe", "gshard", "fastermoe"]  # the paper's order
    assert [row[1] for row in tables[-1].rows] == [128, 128, 1024, 1024]  # the replay's rows
    assert set(page.data["dispatch"]["arms"]) == {"ta_moe", "gshard", "fastermoe"}
    assert page.data["dispatch"]["arms"]["ta_moe"][0] == [3.0, 4.0, 0.0, 1.0]
    text = render_page("ta_moe", page)
    assert text.index("## Verdicts") < text.index("| model |") and "wikitext2_dispatch.png" in text
    assert len(page.figures()[0].draw().get_axes()) == 4  # a dispatch matrix per arm and the off-node curve
    assert report.build(PaperResults("ta_moe", folder, {})) is None
