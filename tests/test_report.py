"""The results page from a tiny synthetic results tree: the first screen's verdicts, every referenced number
with its kind, per-paper counts, every CPU, references recomputed from the current paper.yaml, the commit and
date the page was made at, and files that must stay off the page."""

from __future__ import annotations

import json

import pytest

from shared.reference import KINDS
from shared.report import write_report
from shared.report.content import UNRECORDED_CPU, record_cpus
from tests.report_synthetic import write_synthetic


@pytest.fixture
def built(tmp_path):
    root = write_synthetic(tmp_path)
    report = write_report(root, plots=False)
    return root, report


def _first_table(markdown: str, header: str = "| paper |") -> list[list[str]]:
    lines = markdown.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def test_first_screen_is_each_papers_verdict_then_every_referenced_number(built):
    root, _ = built
    text = (root / "README.md").read_text()
    assert "| paper | status | claim or number | effect [95% interval] or evidence | scale here / claim's |" in text
    assert "**Numbers**" not in text and "| test_rank |" not in text  # the detailed tables are on DETAILS.md
    # No claims: the headline numbers that have a reference are the paper's verdict, failure and success alike.
    assert _first_table(text) == [
        ["[toy](toy/README.md)", "🟢 **reproduced**", "test_acc of toy on d1", "80.20 vs 80.00 (paper)", "—"],
        ["", "🔴 **not reproduced**", "test_acc of toy on d2", "61.00 vs 50.00 (secondary)", "—"]]
    rows = _first_table((root / "DETAILS.md").read_text(), "| paper | status | dataset |")
    # paper, status, dataset, model, metric, reproduced, reference, kind, counts
    assert [(r[2], r[3], r[4]) for r in rows] == [("d1", "toy", "test_acc"), ("d2", "toy", "test_acc")]
    d1, d2 = rows
    # The stored comparison said "no reference": the page recomputed it from the paper.yaml as it is now.
    assert d1[1] == "🟢 **reproduced**" and d1[5:8] == ["80.20 ± 0.14 (n=2)", "80.00", "`paper`"]
    assert d2[1] == "🔴 **not reproduced**" and d2[5:8] == ["61.00 ± 1.41 (n=2)", "50.00", "`secondary`"]
    # Test rows of the paper: toy d1/d2 and base d1/d2, test_acc and test_rank each -> 1 / 1 / 6.
    assert d1[8] == "1 / 1 / 6" and d2[8] == ""


def _claim(status: str, text: str = "c", **kw):
    from shared.report.paper_hook import Claim

    return Claim(text, "abstract", True, status, **kw)


def test_central_claims_are_the_testable_ones_else_the_first_and_every_paper_has_a_line(built):
    from dataclasses import replace

    from shared.report.text import central_claims, verdicts

    _, report = built
    (toy,) = report.papers
    toy.claims = [_claim("not testable here", "a"), _claim("supported", "b", effect=1.5, interval=(1.2, 1.8),
                                                           unit="x (old / new time)"),
                  _claim("contradicted", "c", effect=-2.0, interval=(-3.0, -1.0), unit="F1 points (new - old)")]
    assert [c.text for c in central_claims(toy)] == ["b", "c"]
    found = verdicts(toy)
    assert [(v.status, v.text, v.evidence) for v in found[:3]] == [
        ("supported", "b", "1.5x [1.2, 1.8]"), ("contradicted", "c", "-2 [-3, -1] F1 points"),
        ("not testable here", "a", "—")]  # the claims not testable here: one line naming them
    assert [v.status for v in found[3:]] == ["reproduced", "not reproduced"]  # the referenced headline rows
    toy.claims = [_claim("not testable here", "a", evidence="needs 64 GPUs; and more"), _claim("not testable here")]
    assert [(v.status, v.text, v.evidence) for v in verdicts(toy)][0] == ("not testable here", "a; c", "—")
    # No claim, no reference anywhere: the first headline number still speaks, marked "no reference".
    toy.claims = []
    toy.rows = [replace(r, status="no reference", reported=None, kind=None) for r in toy.rows]
    toy.headlines = [replace(h, row=replace(h.row, status="no reference", reported=None)) for h in toy.headlines]
    (only,) = verdicts(toy)
    assert only.status == "no reference" and only.text == "test_acc of toy on d1"


def test_other_referenced_numbers_are_counted_on_the_first_screen(built):
    from dataclasses import replace

    from shared.report.text import verdicts

    _, report = built
    (toy,) = report.papers
    extra = [replace(r, status=s, reported=1.0, kind="paper") for r, s in
             zip([r for r in toy.rows if r.model == "base"], ["reproduced", "not reproduced", "not reproduced"])]
    toy.rows = toy.rows + extra
    last = verdicts(toy)[-1]
    assert (last.status, last.text) == ("not reproduced", "1 of 3 other numbers with a reference reproduced")


def test_shorten_keeps_a_telling_parenthesis():
    from shared.report.text import shorten

    text = "PP-OCRv3 is more accurate end to end than PP-OCRv2 at comparable speed (FUNSD test, word-split protocol)"
    short = shorten(text, 54)
    assert len(short) <= 54 and short.endswith("… (FUNSD test, word-split protocol)")
    assert shorten("short", 54) == "short"


def test_left_out_files_are_named_not_tabled(built):
    root, report = built
    text = (root / "README.md").read_text()
    assert "smokey" not in text and "halfway" not in text.split("**Unfinished runs**")[0]
    assert report.unfinished == ["toy/d2/halfway.partial.json: 1 of 3 seeds done"]
    assert len(report.unreadable) == 1 and report.unreadable[0].startswith("toy/d1/broken.json: JSONDecodeError")
    assert "toy/d1/broken.json" in text and all("broken" not in r for row in _first_table(text) for r in row)


def test_kinds_legend_and_every_cpu_are_on_the_details_page(built):
    root, report = built
    text = (root / "DETAILS.md").read_text()
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
    html = (root / "index.html").read_text() + (root / "details.html").read_text()
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
    assert '<img src="toy/reproduced_vs_reported.png"' in (root / "details.html").read_text()
    assert html.count('<span class="status good">reproduced</span>') >= 1
    assert html.count('<span class="status bad">not reproduced</span>') >= 1
    assert 'class="scroll"' in html and "<script" not in html
    # The intro's Markdown is HTML here: no literal backticks anywhere on the page.
    assert "<code>make report</code>" in html and "`" not in html


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

    from shared.report.content import Row
    from shared.report.plot import MAX_COLS, PANEL_W, plot_paper

    metrics = [f"test_{m}_{stage}" for stage in ("base", "rep") for m in ("mrr", "mr", "hits1", "hits3", "hits10")]
    rows = [Row(paper="kg", dataset=d, model=m, metric=metric, mean=5000.0 if "_mr_" in metric else 0.3, std=0.01,
                n=3, reported=None, kind=None, source=None, copied_by=None, verified=None, difference=None,
                status="no reference", others=(), missing_seeds=(), cpus=("X",), gpu=None, threads=1, wall_seconds=1)
            for metric in metrics for d in ("a", "b") for m in ("transe", "distmult", "complex", "rotate", "x", "y")]
    out = tmp_path / "plot.png"
    plot_paper("kg", rows, ("transe",), out)
    width, height = struct.unpack(">II", out.read_bytes()[16:24])  # PNG IHDR
    assert width <= 960 and height < 2 * width
    assert width == pytest.approx(MAX_COLS * PANEL_W * 100, abs=2)


def test_plot_draws_interval_bounds_as_error_bars_not_as_metrics(tmp_path, monkeypatch):
    from shared.report import plot
    from shared.report.content import Row

    figures = []
    monkeypatch.setattr(plot, "save_figure_atomic", lambda fig, out, dpi: figures.append(fig))

    def row(metric, mean, std=0.0):
        return Row(paper="p", dataset="d", model="m", metric=metric, mean=mean, std=std, n=1, reported=None,
                   kind=None, source=None, copied_by=None, verified=None, difference=None, status="no reference",
                   others=(), missing_seeds=(), cpus=("X",), gpu=None, threads=1, wall_seconds=1)

    rows = [row("test_acc", 70.0), row("test_acc_ci_low", 48.0), row("test_acc_ci_high", 85.0), row("test_f1", 5, 1)]
    plot.plot_paper("p", rows, ("m",), tmp_path / "plot.png")
    (fig,) = figures
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == ["acc", "f1"]
    bars = {ax.get_title(): ax.containers[0][2][0].get_segments()[0] for ax in panels}  # errorbar's vertical line
    assert [p[1] for p in bars["acc"]] == pytest.approx([48.0, 85.0])
    assert [p[1] for p in bars["f1"]] == pytest.approx([4.0, 6.0])


def test_claims_file_in_the_one_schema_reaches_the_page_and_a_bad_status_is_refused(tmp_path):
    from shared.report.content import claims_of
    from shared.report.markdown import _claims_table

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
    assert "| [p](#p) | ⚪ **not testable here** | 2x faster | 2x faster | needs 64 GPUs | — | abstract | yes |" in table
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
    md, html = (root / "DETAILS.md").read_text(), (root / "details.html").read_text()
    assert "no official code" in md and "no official code" in html
    assert "official code None" not in md and 'href=""' not in html


def test_the_page_names_its_commit_and_date_and_regenerating_gives_the_same_bytes(tmp_path):
    import subprocess

    root = write_synthetic(tmp_path)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "GIT_COMMITTER_DATE": "2024-05-06T07:08:09+00:00", "GIT_AUTHOR_DATE": "2024-05-06T07:08:09+00:00"}
    git = ["git", "-C", str(tmp_path), "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "results"], check=True, env={**__import__("os").environ, **env})
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    report = write_report(root, plots=False)
    assert (report.commit, report.date) == (commit, "2024-05-06")
    pages = {name: (root / name).read_bytes() for name in ("README.md", "index.html", "DETAILS.md", "details.html")}
    stamp = f"at commit {commit[:10]}, 2024-05-06"
    assert stamp in pages["README.md"].decode() and stamp in pages["index.html"].decode()
    write_report(root, plots=False)
    assert pages == {name: (root / name).read_bytes() for name in pages}


def test_a_validation_metric_is_a_row_only_when_it_has_a_reference():
    # nanoGPT's documented number is a validation loss (its split has no test part): that row must reach the
    # index; an unreferenced validation metric only selects models and stays off it
    from shared.report.content import rows_of

    def entry(metric: str, reported: float | None) -> dict:
        return {"metric": metric, "reproduced_mean": 1.9, "reproduced_std": 0.01, "n": 3, "reported": reported,
                "status": "reproduced" if reported is not None else "no reference"}

    record = {"paper": "p", "dataset": "d", "model": "m", "comparison": [
        entry("valid_loss", 1.88), entry("valid_ppl", None), entry("val_mrr", None), entry("test_ppl", None)]}
    assert [r.metric for r in rows_of(record, None)] == ["valid_loss", "test_ppl"]
