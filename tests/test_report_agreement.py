"""Page = index = result file = terminal, row by row; a stale stored comparison is recomputed, not trusted;
a paper's report() hook reaches its own page and the first screen; a package without results is named."""

from __future__ import annotations

import csv
import json

import pytest

from shared.report import summary, write_report
from shared.report.paper_hook import Claim, Figure, PaperReport, Table
from tests.report_synthetic import write_synthetic


def _hook(results):
    acc = results.record("d1", "toy")["aggregate"]["test_acc"]["mean"]
    claim = Claim("toy beats base", "Table 2", True, "supported", evidence=f"test_acc {acc:.2f}",
                  effect=1.0, interval=(0.5, 1.5))
    return PaperReport(blocks=["# toy", Table(["dataset", "models"], [[d, len(results.models(d))] for d in results.datasets()]),
                               Figure("never_drawn.png", draw=lambda: 1 / 0)], claims=[claim], data={"acc": acc})


@pytest.fixture
def built(tmp_path):
    root = write_synthetic(tmp_path)
    (tmp_path / "replications" / "other").mkdir()  # a package that has not run yet
    (tmp_path / "replications" / "other" / "paper.yaml").write_text("title: other\nreported: []\ntolerances: {}\n")
    report = write_report(root, tmp_path / "replications", plots=False, hooks={"toy": _hook})
    return root, report


def _table_rows(markdown: str, header_start: str) -> list[list[str]]:
    lines = markdown.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def test_page_index_result_file_and_terminal_agree_row_by_row(built):
    root, report = built
    page = {(r[0], r[1], r[2]): (r[3], r[9]) for r in _table_rows((root / "toy" / "RESULTS.md").read_text(), "| dataset |")}
    index = json.loads((root / "index.json").read_text())
    with open(root / "index.csv") as fh:
        table = list(csv.DictReader(fh))
    terminal = summary(report)
    assert len(page) == len(index["rows"]) == len(table) == 8  # 4 records x (test_acc, test_rank); val_ left out
    for entry, row in zip(index["rows"], table, strict=True):
        key = (entry["dataset"], entry["model"], entry["metric"])
        assert page[key][1] == entry["status"] == row["status"]
        assert f"{entry['paper']}/{key[0]}/{key[1]} {key[2]}: {page[key][0]} |" in terminal
        assert terminal.count(f"| {entry['status']}") >= 1
        stored = json.loads((root / "toy" / key[0] / f"{key[1]}.json").read_text())
        (comparison,) = [c for c in stored["comparison"] if c["metric"] == key[2]]
        assert comparison["status"] == entry["status"]  # the result file was refreshed, not left stale


def test_first_screen_agrees_on_page_html_and_terminal(built):
    from shared.report.text import verdicts

    root, report = built
    markdown, html, terminal = ((root / "README.md").read_text(), (root / "index.html").read_text(), summary(report))
    found = [v for s in report.papers for v in verdicts(s)]
    assert [v.status for v in found] == ["supported", "reproduced", "not reproduced"]
    for v in found:
        assert f"**{v.status}** | {v.text} | {v.evidence} |" in markdown
        assert f'<span class="status {v.tone}">{v.status}</span></td><td class="claim" title=' in html and v.text in html
        assert f"  {v.paper}: {v.status} | {v.text} | {v.evidence}" in terminal


def test_a_stale_stored_comparison_is_recomputed_from_paper_yaml(built):
    root, report = built
    stored = json.loads((root / "toy" / "d1" / "toy.json").read_text())
    (acc,) = [c for c in stored["comparison"] if c["metric"] == "test_acc"]
    # The fixture stored "no reference"; paper.yaml says 80.0 +- 1.0 (kind paper) for d1/toy.
    assert acc["status"] == "reproduced" and acc["reported"] == 80.0 and acc["reference_kind"] == "paper"


def test_hook_writes_the_papers_own_page_and_its_claims_reach_the_first_screen(built):
    root, _ = built
    page = (root / "toy" / "README.md").read_text()
    assert page.startswith("# toy\n") and "| d1 | 2 |" in page and "![never_drawn](never_drawn.png)" in page
    claims = json.loads((root / "toy" / "claims.json").read_text())
    assert claims["claims"][0]["status"] == "supported" and claims["claims"][0]["interval"] == [0.5, 1.5]
    assert claims["data"]["acc"] == pytest.approx(80.2)
    first = (root / "README.md").read_text()
    details = (root / "DETAILS.md").read_text()
    assert "| 🟢 **supported** | toy beats base | toy beats base | test_acc 80.20 | — | Table 2 | yes |" in details
    assert "| [toy](toy/README.md) | 🟢 **supported** | toy beats base | 1 [0.5, 1.5] | — |" in first  # first screen
    index = json.loads((root / "index.json").read_text())
    assert index["claims"][0]["paper"] == "toy" and index["claims"][0]["status"] == "supported"


def test_a_package_without_results_is_named_not_dropped(built):
    root, report = built
    assert report.without_results == ("other",)
    assert "**No results yet**" in (root / "README.md").read_text() and "other" in summary(report)


def test_a_known_reference_without_a_tolerance_is_an_error_not_no_reference(tmp_path):
    root = write_synthetic(tmp_path)
    paper = tmp_path / "replications" / "toy" / "paper.yaml"
    paper.write_text(paper.read_text().replace("tolerances: {test_acc: 1.0}", "tolerances: {}"))
    with pytest.raises(ValueError, match="declare tolerances.test_acc"):
        write_report(root, tmp_path / "replications", plots=False)


def test_a_stored_aggregate_with_another_std_convention_is_recomputed_from_the_runs(tmp_path):
    """A record aggregated before the suite settled on the sample std (ddof=1) is refreshed from its runs."""
    root = write_synthetic(tmp_path)
    path = root / "toy" / "d2" / "toy.json"
    stale = json.loads(path.read_text())
    stale["aggregate"]["test_acc"]["std"] = 1.0  # population std of [60, 62]; the sample std is sqrt(2)
    path.write_text(json.dumps(stale))
    write_report(root, tmp_path / "replications", plots=False)
    fresh = json.loads(path.read_text())["aggregate"]["test_acc"]
    assert fresh["std"] == pytest.approx(2 ** 0.5) and fresh["mean"] == 61.0 and fresh["n"] == 2


def test_a_record_without_its_aggregate_is_recomputed_and_the_pages_are_built(tmp_path):
    root = write_synthetic(tmp_path)
    path = root / "toy" / "d2" / "toy.json"
    record = json.loads(path.read_text())
    del record["aggregate"]
    path.write_text(json.dumps(record))
    report = write_report(root, tmp_path / "replications", plots=False)
    assert json.loads(path.read_text())["aggregate"]["test_acc"]["mean"] == 61.0
    assert any(r.dataset == "d2" and r.model == "toy" for s in report.papers for r in s.rows)


def test_a_page_whose_data_is_missing_is_kept_as_it_is(tmp_path, capsys):
    """`make report` without the data mirror: a hook that needs its dataset keeps the existing page and says so."""
    from shared.data import DataError

    root = write_synthetic(tmp_path)

    def needs_data(results):
        raise DataError("dataset 'toy': file 'x' is unavailable")

    (root / "toy" / "claims.json").write_text('{"paper": "toy", "claims": [], "data": {}}')
    before = (root / "toy" / "README.md").read_text()
    write_report(root, tmp_path / "replications", plots=False, hooks={"toy": needs_data})
    assert (root / "toy" / "README.md").read_text() == before
    assert "toy: its page needs data that is not here" in capsys.readouterr().err
