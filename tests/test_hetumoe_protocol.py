"""HetuMoE's protocol: the claim check's direction logic on hand-made records, the paper file's claims,
and one real measurement round through the Replication interface on local gloo ranks."""

from __future__ import annotations

import pytest
import yaml
from omegaconf import OmegaConf

from replications.hetumoe import REPLICATION, metric_name, report
from shared.reference import load_paper
from tests.runs import run_of


def record(model: str, ms: dict[int, dict[str, float]]) -> dict:
    runs = [{"seed": s, "metrics": m, "git_commit": "abc", "train": {"cluster": "emulated"}} for s, m in ms.items()]
    names = next(iter(ms.values()))
    agg = {k: {"mean": sum(m[k] for m in ms.values()) / len(ms)} for k in names}
    return {"dataset": "testbed_2x2", "model": model, "runs": runs, "aggregate": agg,
            "environment": {"git_dirty": False}}


SMALL, BIG = metric_name(100, 4096), metric_name(100, 2**20)


def rows(flat_small: list[float], hier_small: list[float]) -> list[dict]:
    flat = {s + 1: {SMALL: f, BIG: 100.0} for s, f in enumerate(flat_small)}
    hier = {s + 1: {SMALL: h, BIG: 200.0} for s, h in enumerate(hier_small)}
    return report.compare({"hetumoe": record("hetumoe", hier), "hetumoe_flat": record("hetumoe_flat", flat)})


def test_metric_names_round_trip():
    assert metric_name(100, 4096) == "a2a_ms_r100_4KiB" and metric_name(1000, 2**23) == "a2a_ms_r1000_8MiB"
    m = report.METRIC.match(metric_name(400, 65536))
    assert m and report._bytes(m) == 65536 and float(m["rate"]) == 400


def test_speedup_is_paired_by_seed():
    r = rows([2.0, 4.0], [1.0, 8.0])
    small = next(x for x in r if x["bytes"] == 4096)
    assert small["speedups"] == [2.0, 0.5]
    assert small["flat_ms"] == 3.0 and small["hier_ms"] == 4.5
    big = next(x for x in r if x["bytes"] == 2**20)
    assert big["speedups"] == [0.5, 0.5]


@pytest.mark.parametrize("flat,hier,want", [([2.0, 3.0], [1.0, 1.0], "supported"),
                                            ([1.0, 1.0], [2.0, 3.0], "contradicted"),
                                            ([2.0, 1.0], [1.0, 2.0], "inconclusive")])
def test_direction_at_the_smallest_size(flat, hier, want):
    assert report.direction(rows(flat, hier)) == want  # the larger size (always slower) does not count


def test_claim_statuses():
    supported = {"testbed_2x2": rows([2.0], [1.0]), "testbed_2x4": rows([3.0], [1.0])}
    claims = report.claim_check(supported, {"emulated"})
    assert [c.status for c in claims] == ["not testable here", "not testable here", "supported"]
    assert claims[2].interval == (2.0, 3.0) and claims[2].kind == "paper"
    mixed = {"testbed_2x2": rows([2.0], [1.0]), "testbed_2x4": rows([1.0], [3.0])}
    assert report.claim_check(mixed, {"emulated"})[2].status == "inconclusive"
    assert report.claim_check(supported, {"local"})[2].status == "not run"  # unshaped: no verdict


def test_page_from_records(tmp_path):
    from shared.paper_report import PaperResults

    hier = {s: {SMALL: 1.0, BIG: 2.0} for s in (1, 2)}
    flat = {s: {SMALL: 2.0, BIG: 1.0} for s in (1, 2)}
    records = {(t, m): {**record(m, ms), "dataset": t} for t in ("testbed_2x2", "testbed_2x4")
               for m, ms in (("hetumoe", hier), ("hetumoe_flat", flat))}
    page = report.build(PaperResults("hetumoe", tmp_path / "hetumoe", records))
    assert [c.status for c in page.claims][2] == "supported"
    assert [t.title for t in page.blocks if hasattr(t, "header")] == ["testbed_2x2", "testbed_2x4"]
    assert report.build(PaperResults("hetumoe", tmp_path / "hetumoe", {})) is None


def test_paper_file_claims_carry_source_kind_and_verified():
    paper = load_paper(REPLICATION.paper_file)
    raw = yaml.safe_load(REPLICATION.paper_file.read_text())
    assert paper["title"].startswith("HetuMoE")
    for claim in raw["claims"]:
        assert claim["kind"] == "paper" and claim["source"] and isinstance(claim["verified"], bool)
        assert claim.get("testable_here") is not None
    assert [c["values"] for c in raw["claims"][:2]] == [{"speedup_min": 1.15}, {"speedup_max": 8.1}]
    assert all(e["value"] is None for e in raw["reported"])  # no number of the paper is known


# No golden smoke values (tests/golden.py) for HetuMoE: every metric of its record is an all-to-all wall-clock
# time (a2a_ms_r<rate>_<size>, medians of timed rounds), which varies run to run; nothing timing-free to pin.
@pytest.mark.slow
def test_one_measurement_round_on_local_ranks():
    cfg = OmegaConf.create({
        "paper": {"protocol": {"cluster": "local", "rates_mbit": [100], "sizes": [4096, 65536], "reps": 5}},
        "dataset": {"name": "testbed_2x2", "nodes": 2, "ranks_per_node": 1},
        "model": {"a2a": "hierarchical"}})
    run = run_of(cfg)
    data = REPLICATION.load_data(run)
    model = REPLICATION.build_model(run, data)
    summary = REPLICATION.train(run, model, data, 1, lambda m, s: None)
    metrics = REPLICATION.evaluate(run, model, data, 1, summary)
    assert set(metrics) == {"a2a_ms_r100_4KiB", "a2a_ms_r100_64KiB"} and all(v > 0 for v in metrics.values())
    assert summary["cluster"] == "local" and len(summary["gflops_probe"]) == 1


def test_bad_protocol_values_are_refused():
    base = {"paper": {"protocol": {"cluster": "local", "rates_mbit": [100], "sizes": [4096], "reps": 5}},
            "dataset": {"name": "testbed_2x2", "nodes": 2, "ranks_per_node": 1}, "model": {"a2a": "ring"}}
    cfg = OmegaConf.create(base)
    with pytest.raises(ValueError, match="model.a2a"):
        REPLICATION.build_model(run_of(cfg), REPLICATION.load_data(run_of(cfg)))
    cfg.paper.protocol.reps = 3
    with pytest.raises(ValueError, match="reps must be >= 5"):
        REPLICATION.load_data(run_of(cfg))
    cfg.paper.protocol.reps, cfg.paper.protocol.cluster = 5, "cloud"
    with pytest.raises(ValueError, match="cluster"):
        REPLICATION.load_data(run_of(cfg))
