"""The MoE layer benchmark's statistics: paired ratios, their bootstrap interval and the verdict rule."""

import pytest

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
