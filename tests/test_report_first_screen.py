"""The first screen a researcher reads (issue 39): each claim in its short sentence (never cut), its status with the
scale it was reached at (a verdict far below the claim's scale in its own neutral marker), the effect with its
interval and the scale ratio; the forest plot of every judged claim; each paper's page opening with its verdicts;
index.json carrying both scales; and claims handed from the hooks to the pages in memory."""

from __future__ import annotations

import json
import os

import pytest

from shared.report import content, write_report
from shared.report.forest import FOREST_NAME, reference_lines
from shared.report.paper_hook import Claim
from tests.report_synthetic import claims_hook, with_claims, write_synthetic

SHORT_D1 = "toy beats base in test accuracy (d1)"


@pytest.fixture
def site(tmp_path):
    root = write_synthetic(tmp_path)
    with_claims(tmp_path)
    report = write_report(root, tmp_path / "replications", plots=False, hooks={"toy": claims_hook})
    return root, report


def _rows(markdown: str, header: str) -> list[list[str]]:
    lines = markdown.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines[start + 2:] if line.startswith("|")][:50]


def test_first_screen_has_short_sentences_status_effect_and_scale_ratio(site):
    root, _ = site
    text = (root / "README.md").read_text()
    rows = _rows(text, "| paper | status |")
    assert rows[:3] == [
        ["[toy](toy/README.md)", "🔘 **supported** at 0.81M params (claim: 1.5B)", SHORT_D1,
         "+9.7 [+4.62, +14.8] accuracy points (95% t, n = 2)", "1/1850"],
        ["", "⚪ **inconclusive**", "toy beats base in test accuracy (d2)",
         "+5.5 [-0.853, +11.9] accuracy points (95% t, n = 2)", "1/1.5"],
        ["", "⚪ **not testable here**", "toy scales to 64 GPUs", "—", "—"]]
    assert "…" not in text  # nothing on the summary is cut
    html = (root / "index.html").read_text()
    # far below the claim's scale: the neutral 'scaled' marker with the scale beside it, never the plain tone
    assert ('<span class="status scaled" title="reached far below the claim\'s scale">◐ supported</span> '
            '<span class="note">at 0.81M params (claim: 1.5B)</span>') in html
    assert '<td class="claim" title="' in html and f">{SHORT_D1}</td>" in html and "…" not in html


def test_a_contradiction_far_below_the_claims_scale_is_never_plain_red(tmp_path):
    from shared.report.markdown import status_cell
    from shared.report.text import verdicts

    root = write_synthetic(tmp_path)
    report = write_report(root, tmp_path / "replications", plots=False)
    (toy,) = report.papers
    toy.claims = [Claim("big claim", "abstract", True, "contradicted", effect=-1.0, interval=(-2.0, -0.5),
                        scale_note="at 0.8M params (claim: 1.5B)", scale_ratio=8e-4)]
    (first, *_) = verdicts(toy)
    assert first.tone == "scaled" and first.display_status == "contradicted at 0.8M params (claim: 1.5B)"
    assert status_cell(first.status, first.scale_note) == "🔘 **contradicted** at 0.8M params (claim: 1.5B)"
    assert first.ratio == "1/1250"


def test_claims_pass_in_memory_and_claims_json_is_read_only_without_a_hook(tmp_path, monkeypatch):
    root = write_synthetic(tmp_path)
    with_claims(tmp_path)

    def no_read_back(root_, paper):
        raise AssertionError(f"claims.json of {paper} read back in the process that wrote it")

    monkeypatch.setattr(content, "claims_of", no_read_back)
    report = write_report(root, tmp_path / "replications", plots=False, hooks={"toy": claims_hook})
    assert [c.id for c in report.papers[0].claims] == ["beats_base", "beats_base", "gpus"]
    monkeypatch.undo()
    # a later run without the hook (its data not here, say) reads what the earlier one wrote
    again = write_report(root, tmp_path / "replications", plots=False)
    assert again.papers[0].claims == report.papers[0].claims


def test_index_json_carries_every_verdicts_scale_and_the_claims(site):
    root, _ = site
    claims = json.loads((root / "index.json").read_text())["claims"]
    d1 = claims[0]
    assert (d1["id"], d1["short"], d1["dataset"]) == ("beats_base", SHORT_D1, "d1")
    assert d1["reached_scale"] == {"params": 8.1e5, "dataset": "d1"}
    assert d1["claim_scale"] == {"params": 1.5e9, "text": "Toy-XL 1.5B"}
    assert d1["scale_ratio"] == pytest.approx(5.4e-4) and d1["scale_ratio_text"] == "1/1850"
    assert d1["scale_note"] == "at 0.81M params (claim: 1.5B)"
    assert d1["display_status"] == "supported at 0.81M params (claim: 1.5B)"


def test_each_papers_page_opens_with_its_verdict_table(site):
    root, _ = site
    page = (root / "toy" / "README.md").read_text()
    assert page.startswith("# toy\n\n## Verdicts\n")
    rows = _rows(page, "| claim | status |")
    assert rows[0][:4] == [SHORT_D1, "🔘 **supported** at 0.81M params (claim: 1.5B)",
                           "+9.7 [+4.62, +14.8] accuracy points (95% t, n = 2)",
                           "0.81M params here; claim: 1.5B params (ratio 1/1850)"]
    assert rows[0][4].startswith("Toy beats the base model in test accuracy on every dataset")  # in full
    assert rows[2][:2] == ["toy scales to 64 GPUs", "⚪ **not testable here**"]


def test_the_details_page_has_the_claims_in_full(site):
    root, _ = site
    details = (root / "DETAILS.md").read_text()
    assert "a sentence long enough that any first screen would cut it" in details
    assert "| test_rank |" not in (root / "README.md").read_text()


def test_reference_lines_per_judge_kind():
    claim = Claim("c", "s", True, "supported", evidence="+1 [0.5, 2] (95% t, n = 3); a - b, paired by seed: "
                  "effect <= 0.35 (no loss beyond the margin)")
    assert reference_lines({"kind": "paired_difference", "claimed": "positive", "margin": 0.5}, claim) == (0.0, (0.5,))
    assert reference_lines({"kind": "paired_difference", "claimed": "negative", "margin": 0.5}, claim) == (0.0, (-0.5,))
    assert reference_lines({"kind": "paired_difference", "claimed": "none", "margin": 0.02,
                            "margin_relative_to": "b"}, claim) == (0.0, (0.35,))  # resolved, from the rule
    assert reference_lines({"kind": "ratio", "claimed": "positive", "margin": 0.1}, claim) == (1.0, (1.1,))
    assert reference_lines({"kind": "steps_to_target", "claimed": "positive", "margin": 0}, claim) == (1.0, ())
    assert reference_lines({"kind": "threshold", "claimed": "positive", "threshold": 1.5}, claim) == (1.5, ())
    assert reference_lines({"kind": "within_tolerance", "tolerance": 1}, claim) == (0.0, (-1.0, 1.0))
    assert reference_lines({"kind": "measured", "measure": "m:f"}, claim) == (None, ())
    assert reference_lines(None, claim) == (None, ())


def test_forest_plot_is_drawn_once_on_the_page_and_byte_identical_on_a_rerun(tmp_path):
    root = write_synthetic(tmp_path)
    with_claims(tmp_path)
    write_report(root, tmp_path / "replications", hooks={"toy": claims_hook})
    forest = root / FOREST_NAME
    first, stamp = forest.read_bytes(), forest.stat().st_mtime_ns
    assert first.startswith(b"\x89PNG") and b"Software" not in first and b"matplotlib" not in first
    assert f'<img src="{FOREST_NAME}"' in (root / "index.html").read_text()
    assert f"]({FOREST_NAME})" in (root / "README.md").read_text()
    os.utime(forest, ns=(stamp, stamp))
    write_report(root, tmp_path / "replications", hooks={"toy": claims_hook})
    assert forest.read_bytes() == first and forest.stat().st_mtime_ns == stamp  # not rewritten


def test_no_judged_claim_no_forest_plot(tmp_path):
    root = write_synthetic(tmp_path)
    write_report(root, tmp_path / "replications")
    assert not (root / FOREST_NAME).exists() and FOREST_NAME not in (root / "index.html").read_text()
