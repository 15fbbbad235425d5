"""The MoE layer benchmark's statistics: paired ratios, their bootstrap interval and the verdict rule."""

import json
import os
import subprocess
import sys

import pytest
import torch

from replications.moe.bench import TARGET, bootstrap_median, markdown, matmul_pair, pairs_per_case, plot, verdict


def test_bootstrap_interval_brackets_the_median_and_verdict_follows_it():
    values = [0.70, 0.72, 0.74, 0.76, 0.78, 0.80, 0.82]
    lo, hi = bootstrap_median(values)
    assert 0.70 <= lo <= 0.76 <= hi <= 0.82
    assert bootstrap_median(values) == (lo, hi)  # seeded: the same interval every run
    row = {"flop_rate_ratio": 0.83, "ratio_ci95": [0.81, 0.85]}
    assert verdict(row) == "met"
    assert verdict({**row, "ratio_ci95": [0.78, 0.85]}) == "met (median)"
    assert verdict({"flop_rate_ratio": 0.79, "ratio_ci95": [0.77, 0.81]}) == "not met (median)"
    assert verdict({"flop_rate_ratio": 0.70, "ratio_ci95": [0.68, TARGET - 0.01]}) == "missed"


def test_matmul_pair_times_both_sides_and_the_table_and_plot_show_the_interval(tmp_path):
    t_grouped, t_dense = matmul_pair([3, 0, 5], 8, 12, 12)
    assert t_grouped > 0 and t_dense > 0
    row = {"gate": "hash", "experts": 8, "k": 1, "expert_hidden": 1024, "kept_assignments": 2048, "tokens": 2048,
           "moe_tokens_per_s": 1.0, "dense_tokens_per_s": 1.0, "moe_gflops": 1.0, "dense_gflops": 1.0,
           "flop_rate_ratio": 0.84, "ratio_ci95": [0.80, 0.88], "matmul_ceiling": 0.90}
    env = {"hardware": {"cpu": "test"}, "git_commit": "abcdef0", "git_dirty": False}
    text = markdown({"threads": 1, "reps": 3, "load_average_after": [0, 0, 0], "environment": env, "rows": [row]})
    assert "| hash | 8 | 1 | 1024 | 2048/2048 |" in text and "0.84 [0.80, 0.88] | 0.90 | met |" in text
    record = {"threads": 1, "environment": env, "rows": [row]}
    plot(record, {**record, "rows": [{**row, "flop_rate_ratio": 0.7}]}, tmp_path / "b.png")
    assert (tmp_path / "b.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_pair_count_is_refused_clearly(monkeypatch):
    monkeypatch.setenv("BENCH_REPS", "12")
    assert pairs_per_case() == 12
    for bad in ("ten", "1", "-3"):
        monkeypatch.setenv("BENCH_REPS", bad)
        with pytest.raises(SystemExit, match="whole number of MoE/dense pairs"):
            pairs_per_case()


def test_peer_check_catches_a_peer_that_computes_something_else():
    """The agreement guard the peer grid relies on: equal on copied weights, refused once one weight differs."""
    from replications.moe.peers import agreement, build, suite_layer

    layer = suite_layer(16, 32, 4, 2)
    x = torch.randn(40, 16)
    peer = build("hf_grouped", layer, 2, 40)
    assert agreement(layer, peer, x, 2)["agrees"]
    with torch.no_grad():
        peer.params[-1][0, 0, 0] += 0.5  # one expert weight of the peer's down projection
    check = agreement(layer, peer, x, 2)
    assert not check["agrees"] and check["output_rel_err"] > 1e-4


def test_peer_table_marks_where_the_suite_is_behind():
    from replications.moe.bench_peers import behind, markdown

    row = {"tokens": 512, "experts": 8, "k": 1, "expert_hidden": 1024, "suite_seconds": 0.01, "pairs": 3}
    rows = [{**row, "peer": "hf_switch", "ratio": 1.21, "ratio_ci95": [1.10, 1.49]},
            {**row, "peer": "hf_grouped", "ratio": 0.80, "ratio_ci95": [0.7, 0.9]},
            {**row, "peer": "hf_eager", "ratio": 0.50, "ratio_ci95": [0.4, 0.6]},
            {**row, "peer": "deepspeed", "skipped": "import deepspeed failed: ModuleNotFoundError"},
            {**row, "peer": "dense", "ratio": 1.05, "ratio_ci95": [1.0, 1.1]},
            {**row, "peer": "ceiling", "ratio": 1.30, "ratio_ci95": [1.2, 1.4]}]
    assert [behind(r) for r in rows] == [True, False, False, False, False, False]
    assert behind({**rows[4], "ratio": 1.11})  # the dense FFN's target is 1.10, not 1
    text = markdown({"grid": {"reps": 3, "d": 256, "h": 1024}, "threads": 1, "wall_seconds": 1.0,
                     "load_average_after": [0, 0, 0], "rows": rows})
    assert "| 512 | 8 | 1 | 10.0 | **1.21 [1.10, 1.49]** | 0.80 [0.70, 0.90] | 0.50 [0.40, 0.60] | n/a |" in text
    assert "ModuleNotFoundError" in text and "behind: 1 of 4 comparisons" in text
    assert "Allocator, the same for every column: glibc defaults" in text  # a record from before the setting
    rows[4].update(ratio=1.40, ratio_ci95=[1.3, 1.5], ceiling_to_dense=1.22)
    text = markdown({"grid": {"reps": 3, "d": 256, "h": 1024}, "threads": 1, "wall_seconds": 1.0,
                     "load_average_after": [0, 0, 0], "rows": rows,
                     "allocator": {"malloc": "glibc 2.36", "mmap_threshold": 2**30, "trim_threshold": 2**30}})
    assert "| **1.40 [1.30, 1.50]** (1.22) |" in text and "dense FFN 1.40 [1.30, 1.50]; its matmuls alone: 1.22" in text
    assert "glibc 2.36, freed blocks up to 1 GiB kept for reuse" in text


def test_peer_grid_at_toy_size_checks_each_peer_and_writes_a_row_per_cell_and_peer(tmp_path):
    """The whole benchmark entry point on the toy grid, in its own process (DeepSpeed starts a process group)."""
    from replications.moe.bench_peers import COLUMNS, PEERS, QUICK

    subprocess.run([sys.executable, "-m", "replications.moe.bench", "--out", str(tmp_path), "--only", "peers", "--quick"],
                   check=True, timeout=600, env={**os.environ, "BENCH_THREADS": "1"})
    pg = json.loads((tmp_path / "benchmark.json").read_text())["peer_grid"]
    rows = {(r["tokens"], r["experts"], r["k"], r["peer"]): r for r in pg["rows"]}
    assert set(rows) == {(T, E, k, p) for T in QUICK.tokens for E in QUICK.experts for k in QUICK.ks for p in COLUMNS}
    for (_, _, k, p), r in rows.items():
        if p == "hf_switch" and k == 2:
            assert "top-1 only" in r["skipped"]
        elif p == "deepspeed" and "skipped" in r:  # not installed (CI installs .[dev] only): the row says why
            assert "deepspeed" in r["skipped"]
        else:
            assert r["pairs"] == QUICK.reps and r["ratio_ci95"][0] <= r["ratio"] <= r["ratio_ci95"][1]
            if p in PEERS:
                assert r["check"]["agrees"] and r["check"]["output_rel_err"] < 1e-4
    assert sum("check" in r for r in rows.values()) >= 6  # the HF peers at least were built and checked
    assert all(r["ceiling_to_dense"] > 0 for (*_, p), r in rows.items() if p == "dense")
    assert pg["allocator"]["malloc"]  # what the columns ran under (the layer's setting, or the user's)
    assert "| 48 | 8 | 2 |" in (tmp_path / "BENCHMARK.md").read_text()
    assert (tmp_path / "benchmark_peers.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
