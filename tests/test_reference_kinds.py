"""Reference kinds: the status uses the strongest known kind, the others travel along, bad entries are refused."""

from __future__ import annotations

import pytest

from shared.reference import NO_REFERENCE, NOT_REPRODUCED, REPRODUCED, compare, load_paper
from shared.stats import summarize


def _entry(kind: str, value: float | None, **extra) -> dict:
    return {"kind": kind, "dataset": "d", "model": "m", "metric": "acc", "value": value, "source": f"{kind} src",
            "verified": kind != "secondary", **extra}


def _row(entries: list[dict], values=(80.0, 80.4)) -> dict:
    paper = {"reported": entries, "tolerances": {"acc": 1.0}}
    return compare(paper, "d", "m", {"acc": summarize(list(values))})[0]


def test_strongest_known_kind_decides_the_status():
    row = _row([_entry("secondary", 80.1, copied_by="X"), _entry("authors_code_run", 75.0, provenance={}),
                _entry("paper", None)])
    # The paper's own number is unknown, so the authors'-code run (stronger than a secondary copy) decides.
    assert row["reference_kind"] == "authors_code_run" and row["reported"] == 75.0
    assert row["status"] == NOT_REPRODUCED and row["difference"] == pytest.approx(5.2)
    # The weaker secondary copy is kept, with its own verdict, for the page to show.
    assert [(o["kind"], o["status"]) for o in row["other_references"]] == [("secondary", REPRODUCED)]


def test_paper_outranks_everything_and_order_in_file_does_not_matter():
    row = _row([_entry("authors_release", 70.0), _entry("paper", 80.0)])
    assert row["reference_kind"] == "paper" and row["status"] == REPRODUCED


def test_only_unknown_values_mean_no_reference():
    row = _row([_entry("paper", None)])
    assert row["status"] == NO_REFERENCE and row["reference_kind"] is None and row["other_references"] == []


def _write(tmp_path, entry_line: str):
    path = tmp_path / "paper.yaml"
    path.write_text(f"title: t\nreported:\n  - {entry_line}\ntolerances: {{acc: 1.0}}\n")
    return path


@pytest.mark.parametrize("line, message", [
    ("{dataset: d, model: m, metric: acc, value: 1.0, source: s, verified: true}", "lacks ['kind']"),
    ("{kind: blog, dataset: d, model: m, metric: acc, value: 1.0, source: s, verified: true}", "valid: paper"),
    ("{kind: secondary, dataset: d, model: m, metric: acc, value: 1.0, source: s, verified: false}", "copied_by"),
    ("{kind: secondary, dataset: d, model: m, metric: acc, value: 1.0, source: s, verified: false, copied_by: null}", "null"),
    ("{kind: authors_code_run, dataset: d, model: m, metric: acc, value: 1.0, source: s, verified: true}", "provenance"),
])
def test_malformed_references_are_refused(tmp_path, line, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_paper(_write(tmp_path, line))


def test_two_references_of_one_kind_are_refused(tmp_path):
    path = tmp_path / "paper.yaml"
    e = "{kind: paper, dataset: d, model: m, metric: acc, value: 1.0, source: s, verified: true}"
    path.write_text(f"title: t\nreported:\n  - {e}\n  - {e}\ntolerances: {{acc: 1.0}}\n")
    with pytest.raises(ValueError, match="one per kind"):
        load_paper(path)


def test_every_paper_file_loads():
    from pathlib import Path

    # a paper states reported numbers, or claims (a systems paper whose gains cannot be re-measured here)
    for path in sorted(Path(__file__).resolve().parents[1].glob("replications/*/paper.yaml")):
        paper = load_paper(path)
        assert paper["reported"] or paper.get("claims"), path


def test_declared_target_rule_picks_the_best_known_value():
    entries = [_entry("authors_release", 70.0), _entry("independent_artifacts", 80.2, run_by="team B"),
               _entry("paper", None)]
    paper = {"reported": entries, "tolerances": {"acc": 1.0}, "targets": {"acc": "highest"}}
    row = compare(paper, "d", "m", {"acc": summarize([80.0, 80.4])})[0]
    assert row["reference_kind"] == "independent_artifacts" and row["status"] == REPRODUCED
    assert [(o["kind"], o["status"]) for o in row["other_references"]] == [("authors_release", NOT_REPRODUCED)]
    # Without the rule the strongest kind decides, as everywhere else.
    assert _row(entries)["reference_kind"] == "authors_release"
    paper["targets"] = {"acc": "lowest"}
    assert compare(paper, "d", "m", {"acc": summarize([80.0])})[0]["reported"] == 70.0


def test_unknown_target_rule_and_missing_run_by_are_refused(tmp_path):
    path = tmp_path / "paper.yaml"
    path.write_text("title: t\nreported: []\ntolerances: {acc: 1.0}\ntargets: {acc: biggest}\n")
    with pytest.raises(ValueError, match="targets.acc is 'biggest'; valid: highest, lowest"):
        load_paper(path)
    with pytest.raises(ValueError, match="run_by"):
        load_paper(_write(tmp_path, "{kind: independent_artifacts, dataset: d, model: m, metric: acc, value: 1.0, "
                                    "source: s, verified: true}"))


def test_a_hand_written_caveat_stays_with_the_official_value_and_is_shown_beside_the_status():
    """GAGA's official F1-macro: the value comes from official.json, the caveat (5 of 10 runs collapsed) from
    paper.yaml; the comparison row, the detail page's source cell and the terminal line all carry it."""
    from shared.reference import compare, with_official
    from shared.report.content import rows_of
    from shared.report.text import line, source

    paper = {"title": "toy", "tolerances": {"f1": 1.0}, "reported": [
        {"dataset": "d", "model": "m", "metric": "f1", "value": None, "kind": "authors_code_run", "verified": True,
         "source": "official.json", "caveat": "5 of 10 official runs collapsed"}]}
    official = [{"dataset": "d", "model": "m", "metric": "f1", "value": 54.3, "std": 10.0, "n": 10,
                 "kind": "authors_code_run", "verified": True, "source": "official run"}]
    merged = with_official(paper, official)
    agg = {"f1": {"mean": 64.4, "std": 1.0, "n": 10, "ci95_low": 63.7, "ci95_high": 65.1}}
    row = compare(merged, "d", "m", agg)[0]
    assert row["status"] == "not reproduced" and row["caveat"] == "5 of 10 official runs collapsed"
    assert "caveat" not in compare(with_official({**paper, "reported": []}, official), "d", "m", agg)[0]
    record = {"paper": "toy", "dataset": "d", "model": "m", "comparison": [row], "aggregate": agg, "runs": []}
    (shown,) = rows_of(record, None)
    assert "caveat: 5 of 10 official runs collapsed" in source(shown) and "(caveat: 5 of 10" in line(shown)
