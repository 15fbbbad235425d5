"""PSHGCN's page puts an official-code record beside the suite's PSHGCN seed by seed, with the paired verdict."""

from __future__ import annotations

from pathlib import Path

from replications.pshgcn import report
from shared.claims import paper_claims
from shared.report.paper_hook import PaperResults


def record(values: dict[int, tuple[float, float]]) -> dict:
    return {"runs": [{"seed": s, "metrics": {"test_micro_f1": a, "test_macro_f1": b}} for s, (a, b) in values.items()],
            "repository": "https://example.org/pshgcn", "commit": "f87406ce56ba3780", "patches": [
                {"path": "replications/pshgcn/official/cpu-device.patch", "sha256": "0"}]}


def results(tmp_path: Path, official: dict, suite: dict) -> PaperResults:
    (tmp_path / "pshgcn" / "imdb").mkdir(parents=True)
    (tmp_path / "pshgcn" / "imdb" / "official.json").write_text(__import__("json").dumps(official))
    return PaperResults("pshgcn", tmp_path / "pshgcn", {("imdb", "pshgcn"): suite})


def official_part(results: PaperResults) -> tuple:
    """The page's official tables, with the statuses the claim specs (matches_official_*) give them."""
    return report.official_part(results, paper_claims(report.PAPER_FILE, results))


def test_equal_seeds_agree_and_a_shifted_suite_is_contradicted(tmp_path):
    theirs = {1: (74.75, 72.57), 2: (73.83, 71.06), 3: (74.66, 72.59)}
    blocks, data = official_part(results(tmp_path, record(theirs), record(theirs)))
    assert data["imdb"]["test_micro_f1"]["status"] == "supported"  # differences 0 +- 0: within the ±1 tolerance
    assert blocks[0] == "## imdb: the official code, seed by seed" and len(blocks[1].rows) == 4  # 3 seeds + summary
    # the suite 2 points lower on every seed, with a little noise: wholly outside ±1
    ours = {s: (a - 2.0 + 0.01 * s, b + 0.05 * s) for s, (a, b) in theirs.items()}
    _, data = official_part(results(tmp_path / "shifted", record(theirs), record(ours)))
    assert data["imdb"]["test_micro_f1"]["status"] == "contradicted"
    assert data["imdb"]["test_macro_f1"]["status"] == "supported"
    assert abs(data["imdb"]["test_micro_f1"]["mean_difference"] - (-2.0 + 0.02)) < 1e-9  # hand: mean of -1.99..-1.97


def test_no_official_record_adds_nothing(tmp_path):
    (tmp_path / "pshgcn").mkdir()
    assert official_part(PaperResults("pshgcn", tmp_path / "pshgcn", {("imdb", "pshgcn"): record({})})) == ([], {})


def test_an_official_record_makes_a_page_without_a_benchmark(tmp_path):
    theirs = {1: (74.75, 72.57), 2: (73.83, 71.06)}
    page = report.build(results(tmp_path, record(theirs), record(theirs)))  # no benchmark.json in tmp_path
    assert page is not None and page.blocks[0] == report.TITLE and page.blocks[2] == "## imdb: the official code, seed by seed"
    assert "benchmark" not in page.data and page.data["official"]["imdb"]["test_macro_f1"]["n"] == 2
    claims = {(c.id, c.dataset): c.status for c in page.claims}
    assert claims["matches_official_micro_f1", "imdb"] == claims["matches_official_macro_f1", "imdb"] == "supported"
    assert claims["micro_above_rgcn", "imdb"] == "not run"  # no RGCN record here


def test_each_official_seed_shows_its_wall_and_cpu_time_where_recorded():
    assert report.seed_cost({"wall_seconds": 2808.0, "cpu_seconds": 2790.0}) == "46.8 min (46.5 min)"
    assert report.seed_cost({"wall_seconds": 600.0}) == "10.0 min"  # an older record: no CPU time, none invented
    assert report.seed_cost({}) == "—"
    assert report.total_cost([{"wall_seconds": 600.0, "cpu_seconds": 540.0}, {"wall_seconds": 1200.0, "cpu_seconds": 1080.0}]) \
        == "all seeds: 30.0 min (27.0 min)"
    assert report.total_cost([{"wall_seconds": 600.0, "cpu_seconds": 540.0}, {"wall_seconds": 1200.0}]) == "all seeds: 30.0 min"
