"""HetuMoE's protocol: the H-A2A claim's direction (paper.yaml spec, judged by shared.claims on measures.py's
per-round speed-ups) on hand-made records, the committed records judged as the page shows them, the paper file's
claim specs, and one real measurement round through the Replication interface on local gloo ranks."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from replications.hetumoe import REPLICATION, measures, metric_name, report
from shared.claims import load_claims
from shared.paths import REPO_ROOT
from shared.reference import load_paper
from shared.report.paper_hook import PaperResults, load_paper_results
from tests.runs import run_of


def record(model: str, ms: dict[int, dict[str, float]], cluster: str = "emulated") -> dict:
    runs = [{"seed": s, "metrics": m, "git_commit": "abc", "train": {"cluster": cluster}} for s, m in ms.items()]
    names = next(iter(ms.values()))
    agg = {k: {"mean": sum(m[k] for m in ms.values()) / len(ms)} for k in names}
    return {"dataset": "testbed_2x2", "model": model, "runs": runs, "aggregate": agg,
            "environment": {"git_dirty": False}}


SMALL, BIG = metric_name(100, 4096), metric_name(100, 2**20)


def pair(flat_small: list[float], hier_small: list[float], cluster: str = "emulated") -> dict[str, dict]:
    """One topology's hierarchical and flat records: seeds 1.., the smallest size as given, the larger one 2x slower
    hierarchically (it must not count)."""
    flat = {s + 1: {SMALL: f, BIG: 100.0} for s, f in enumerate(flat_small)}
    hier = {s + 1: {SMALL: h, BIG: 200.0} for s, h in enumerate(hier_small)}
    return {"hetumoe": record("hetumoe", hier, cluster), "hetumoe_flat": record("hetumoe_flat", flat, cluster)}


def page(tmp_path, topologies: dict[str, dict[str, dict]]):
    records = {(t, m): {**r, "dataset": t} for t, pairs in topologies.items() for m, r in pairs.items()}
    return report.build(PaperResults("hetumoe", tmp_path / "hetumoe", records))


def test_metric_names_round_trip():
    assert metric_name(100, 4096) == "a2a_ms_r100_4KiB" and metric_name(1000, 2**23) == "a2a_ms_r1000_8MiB"
    m = measures.METRIC.match(metric_name(400, 65536))
    assert m and measures.size_bytes(m) == 65536 and float(m["rate"]) == 400


def test_speedup_is_paired_by_seed():
    r = measures.compare(pair([2.0, 4.0], [1.0, 8.0]))
    small = next(x for x in r if x["bytes"] == 4096)
    assert small["speedups"] == [2.0, 0.5]
    assert small["flat_ms"] == 3.0 and small["hier_ms"] == 4.5
    big = next(x for x in r if x["bytes"] == 2**20)
    assert big["speedups"] == [0.5, 0.5]


@pytest.mark.parametrize("flat,hier,want", [([2.0, 3.0], [1.0, 1.0], "supported"),
                                            ([1.0, 1.0], [2.0, 3.0], "contradicted"),
                                            ([2.0, 1.0], [1.0, 2.0], "inconclusive")])
def test_direction_at_the_smallest_size(tmp_path, flat, hier, want):
    # the larger size (always slower hierarchically) does not count
    assert page(tmp_path, {"testbed_2x2": pair(flat, hier)}).claims[2].status == want


def test_claim_statuses(tmp_path):
    claims = page(tmp_path, {"testbed_2x2": pair([2.0], [1.0]), "testbed_2x4": pair([3.0], [1.0])}).claims
    assert [c.status for c in claims] == ["not testable here", "not testable here", "supported"]
    assert claims[2].interval == (2.0, 3.0) and claims[2].effect == 2.5 and claims[2].kind == "paper"
    mixed = {"testbed_2x2": pair([2.0], [1.0]), "testbed_2x4": pair([1.0], [3.0])}
    assert page(tmp_path, mixed).claims[2].status == "inconclusive"
    local = page(tmp_path, {"testbed_2x2": pair([2.0], [1.0], "local"), "testbed_2x4": pair([3.0], [1.0], "local")})
    assert local.claims[2].status == "not run" and "emulated" in local.claims[2].evidence  # unshaped: no verdict


def test_page_from_records(tmp_path):
    both = {t: pair([2.0, 2.0], [1.0, 1.0]) for t in ("testbed_2x2", "testbed_2x4")}
    built = page(tmp_path, both)
    assert [c.status for c in built.claims][2] == "supported"
    assert [t.title for t in built.blocks if hasattr(t, "header")] == ["testbed_2x2", "testbed_2x4"]
    assert report.build(PaperResults("hetumoe", tmp_path / "hetumoe", {})) is None


def test_the_committed_records_judged_as_the_page_shows():
    """results/hetumoe (read only): the verdicts as before the claims moved to paper.yaml, with the testbed's scale
    beside the claim's (16 GPUs on 2 nodes)."""
    claims = report.build(load_paper_results(REPO_ROOT / "results", "hetumoe")).claims
    got = [(c.id, c.status, None if c.effect is None else round(c.effect, 4),
            None if c.interval is None else tuple(round(x, 4) for x in c.interval), c.n) for c in claims]
    assert got == [("speedup_min", "not testable here", None, None, 0),
                   ("speedup_switch_bs32", "not testable here", None, None, 0),
                   ("hierarchical_a2a", "inconclusive", 0.7323, (0.1811, 1.3644), 12)]
    a2a = claims[2]
    assert a2a.evidence.startswith("0.732 [0.181, 1.36] x (flat / H-A2A) (range, n = 12)")
    assert "testbed_2x2, testbed_2x4" in a2a.scale and "4 KiB, 3 rounds" in a2a.scale
    assert "2 nodes x 8 GPUs" in a2a.claim_scale["text"]


def test_paper_file_claims_are_specs_with_the_claims_scale():
    paper = load_paper(REPLICATION.paper_file)
    assert paper["title"].startswith("HetuMoE")
    specs = load_claims(REPLICATION.paper_file)
    assert [s.id for s in specs] == ["speedup_min", "speedup_switch_bs32", "hierarchical_a2a"]
    assert all(s.source_kind == "paper" and s.source and s.claim_scale.get("hardware") for s in specs)
    assert [s.verified for s in specs] == [True, True, False]
    assert [bool(s.not_testable) for s in specs] == [True, True, False]
    assert "1.15" not in specs[0].text and "15%" in specs[0].text and "8.1x" in specs[1].text
    assert all(e["value"] is None for e in paper["reported"])  # no number of the paper is known


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
