"""The results page from a tiny synthetic results tree: headline rows with their reference kind, per-paper
counts, every CPU, references recomputed from the current paper.yaml, and files that must stay off the page."""

from __future__ import annotations

import json

import pytest

from shared.reference import KINDS
from shared.report import write_report
from shared.report_data import UNRECORDED_CPU, record_cpus
from tests.report_synthetic import write_synthetic


@pytest.fixture
def built(tmp_path):
    root = write_synthetic(tmp_path)
    report = write_report(root, plots=False)
    return root, report


def _first_table(markdown: str) -> list[list[str]]:
    lines = markdown.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("| paper |"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def test_first_screen_has_one_headline_row_per_dataset_with_kind_status_and_counts(built):
    root, _ = built
    rows = _first_table((root / "README.md").read_text())
    # paper, dataset, model, metric, reproduced, reference, kind, status, counts
    assert [(r[1], r[2], r[3]) for r in rows] == [("d1", "toy", "test_acc"), ("d2", "toy", "test_acc")]
    d1, d2 = rows
    # The stored comparison said "no reference": the page recomputed it from the paper.yaml as it is now.
    assert d1[4:8] == ["80.20 ± 0.10 (n=2)", "80.00", "`paper`", "reproduced"]
    assert d2[4:8] == ["61.00 ± 1.00 (n=2)", "50.00", "`secondary`", "not reproduced"]
    # Test rows of the paper: toy d1/d2 and base d1/d2, test_acc and test_rank each -> 1 / 1 / 6.
    assert d1[8] == "1 / 1 / 6" and d2[8] == ""


def test_left_out_files_are_named_not_tabled(built):
    root, report = built
    text = (root / "README.md").read_text()
    assert "smokey" not in text and "halfway" not in text.split("**Unfinished runs**")[0]
    assert report.unfinished == ["toy/d2/halfway.partial.json: 1 of 3 seeds done"]
    assert len(report.unreadable) == 1 and report.unreadable[0].startswith("toy/d1/broken.json: JSONDecodeError")
    assert "toy/d1/broken.json" in text and all("broken" not in r for row in _first_table(text) for r in row)


def test_kinds_legend_and_every_cpu_are_on_the_first_screen(built):
    root, report = built
    text = (root / "README.md").read_text()
    for kind, meaning in KINDS.items():
        assert f"`{kind}`: {meaning}" in text
    assert set(report.machines) == {"CPU-A", "CPU-B", "CPU-FILE"}
    assert report.machines["CPU-FILE"] == ["toy/d1/base"]
    assert "- CPU-B: 1 result file: toy d1 (toy)" in text


def test_per_paper_page_keeps_every_metric_and_the_papers_own_readme(built):
    root, _ = built
    detail = (root / "toy" / "RESULTS.md").read_text()
    assert detail.count("| test_rank |") == 4 and detail.count("| test_acc |") == 4
    assert "Other et al. 2025" in detail  # a secondary reference names who copied it
    assert (root / "toy" / "README.md").read_text() == "# toy's own summary, written by its hook\n"
    index = (root / "README.md").read_text()
    assert "[RESULTS.md](toy/RESULTS.md)" in index and "[README.md](toy/README.md)" in index
    assert "| test_rank |" not in index  # the long table moved off the first screen


def test_html_has_the_headline_rows_images_and_a_phone_viewport(built):
    root, _ = built
    html = (root / "index.html").read_text()
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
    assert '<img src="toy/reproduced_vs_reported.png"' in html
    assert html.count('<span class="status reproduced">reproduced</span>') >= 1
    assert 'class="scroll"' in html and "<script" not in html


def test_without_a_paper_yaml_the_stored_comparison_and_first_test_metric_are_used(tmp_path):
    root = write_synthetic(tmp_path)
    (tmp_path / "replications" / "toy" / "paper.yaml").unlink()
    stored = json.loads((root / "toy" / "d1" / "toy.json").read_text())
    for c in stored["comparison"]:
        if c["metric"] == "test_acc":
            c.update(reported=79.0, difference=1.2, status="not reproduced")
    (root / "toy" / "d1" / "toy.json").write_text(json.dumps(stored))
    report = write_report(root, plots=False)
    (section,) = report.papers
    assert section.headline_metric == "test_acc" and section.headline_models == ("toy",)
    d1 = section.headlines[0].row
    assert d1 is not None and d1.reported == 79.0 and d1.status == "not reproduced" and d1.kind is None


def test_cpus_per_seed_fall_back_to_the_file_and_flag_mixed_files():
    env = {"environment": {"hardware": {"cpu": "X"}}}
    assert record_cpus({**env, "runs": [{}, {}]}) == ("X",)
    assert record_cpus({**env, "runs": [{"cpu": "A"}, {"cpu": "B"}, {"cpu": "A"}]}) == ("A", "B")
    assert record_cpus({**env, "runs": [{}, {"cpu": "A"}]}) == (UNRECORDED_CPU, "A")


def test_plot_gives_each_metric_its_own_panel_at_a_capped_width(tmp_path):
    """Issue #19: mean rank (thousands) beside MRR (fractions) on one axis, 4,928 px wide."""
    import struct

    from shared.report_data import Row
    from shared.report_plot import MAX_COLS, plot_paper

    metrics = [f"test_{m}_{stage}" for stage in ("base", "rep") for m in ("mrr", "mr", "hits1", "hits3", "hits10")]
    rows = [Row(paper="kg", dataset=d, model=m, metric=metric, mean=5000.0 if "_mr_" in metric else 0.3, std=0.01,
                n=3, reported=None, kind=None, source=None, copied_by=None, verified=None, difference=None,
                status="no reference", others=(), missing_seeds=(), cpus=("X",), gpu=None, threads=1, wall_seconds=1)
            for metric in metrics for d in ("a", "b") for m in ("transe", "distmult", "complex", "rotate", "x", "y")]
    out = tmp_path / "plot.png"
    plot_paper("kg", rows, ("transe",), out)
    width, height = struct.unpack(">II", out.read_bytes()[16:24])  # PNG IHDR
    assert width <= 1320 and height < 2 * width
    assert width == pytest.approx(MAX_COLS * 3.3 * 100, abs=2)


def test_claims_file_in_the_one_schema_reaches_the_page_and_a_bad_status_is_refused(tmp_path):
    from shared.report_data import claims_of
    from shared.report_md import _claims_table

    (tmp_path / "p").mkdir()
    claim = {"text": "2x faster", "source": "abstract", "verified": True, "status": "not testable here",
             "evidence": "needs 64 GPUs", "effect": None, "interval": None, "unit": "", "scale": ""}
    (tmp_path / "p" / "claims.json").write_text(json.dumps({"paper": "p", "claims": [claim], "data": {}}))
    (tmp_path / "p" / "old_claim.json").write_text(json.dumps({"claim": "x", "verdict": "holds"}))  # not read
    claims = claims_of(tmp_path, "p")
    assert [(c.text, c.status, c.evidence) for c in claims] == [("2x faster", "not testable here", "needs 64 GPUs")]

    class Section:
        paper, claims = "p", []

    section = Section()
    section.claims = claims
    table = "\n".join(_claims_table(type("R", (), {"papers": [section]})()))
    assert "| 2x faster | abstract | yes | **not testable here** | needs 64 GPUs |" in table
    (tmp_path / "p" / "claims.json").write_text(json.dumps({"claims": [{**claim, "status": "direction supported"}]}))
    with pytest.raises(ValueError, match="unknown status 'direction supported'"):
        claims_of(tmp_path, "p")


def test_a_paper_without_official_code_says_so_on_both_pages(tmp_path):
    root = write_synthetic(tmp_path)
    yaml_path = tmp_path / "replications" / "toy" / "paper.yaml"
    text = yaml_path.read_text()
    start, end = text.index("code: {url:"), text.index("reported:")
    yaml_path.write_text(text[:start] + "code: {url: null}\n" + text[end:])
    write_report(root, plots=False)
    md, html = (root / "README.md").read_text(), (root / "index.html").read_text()
    assert "no official code" in md and "no official code" in html
    assert "official code None" not in md and 'href=""' not in html


def test_complete_records_keep_the_given_order_and_drop_unfinished_runs(tmp_path):
    from shared.report_data import complete_records

    (tmp_path / "a.json").write_text(json.dumps({"complete": True, "runs": [1]}))
    (tmp_path / "b.json").write_text(json.dumps({"complete": False, "runs": []}))
    (tmp_path / "c.json").write_text(json.dumps({"runs": [2]}))  # hand-written, no flag: not marked unfinished
    got = complete_records(tmp_path, ["c", "b", "missing", "a"])
    assert list(got) == ["c", "a"] and got["a"]["runs"] == [1]
