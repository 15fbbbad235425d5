"""ERNIE-mmLayout's claim specs (paper.yaml) load and judge the committed records (results/mmlayout, read only) the
way the page shows them (the numbers of results/mmlayout/claims.json before the claims moved to paper.yaml), and a
verdict the seeds' signs decide names the seed that decided it."""

from __future__ import annotations

import numpy as np
import pytest

from replications.mmlayout import report
from shared.claims import judge_paper, load_claims
from shared.paths import REPO_ROOT
from shared.report.paper_hook import PaperResults, load_paper_results

SCALE = "3 seeds x 4 epochs on a CPU, MiniLM without the visual branch, F1 still rising in the last epoch"


def test_the_specs_load():
    specs = load_claims(report.PAPER)
    assert [s.id for s in specs] == ["multigrained", "fewer_parameters"]
    assert specs[0].judge["kind"] == "measured" and specs[0].per_dataset == ("funsd",)
    assert specs[0].arms == ["mmlayout", "mmlayout_control"] and specs[1].not_testable
    assert all(s.claim_scale["text"] == "unknown" for s in specs)  # the paper's backbone and size are not readable


def test_the_committed_records_judged_as_the_page_shows():
    page = report.build(load_paper_results(REPO_ROOT / "results", "mmlayout"), units=False)
    main, params = page.claims
    assert (main.status, round(main.effect, 4), tuple(round(x, 4) for x in main.interval)) == \
        ("supported", 6.4332, (4.7655, 8.0068))
    assert main.evidence.startswith("+6.43 [+4.77, +8.01] F1 points (mmLayout - control) (95% paired bootstrap over "
                                    "test documents, n = 50)")
    assert main.evidence.endswith("per seed +6.93, +6.26, +6.10 (seeds 1, 2, 3)")
    assert main.scale == SCALE and main.reached_scale["params"] == 26_032_135 and main.scale_ratio is None
    assert (params.status, params.effect) == ("not testable here", None)
    assert page.data["status"] == "supported"


def _record(model: str, per_seed: dict[int, list[int]]) -> dict:
    """20 identical documents per seed, each with [tp, pred, gold] as given."""
    runs = [{"seed": s, "metrics": {}, "train": {"details": {"per_doc": [docs] * 20}, "parameters": 10}}
            for s, docs in per_seed.items()]
    return {"dataset": "funsd", "model": model, "runs": runs,
            "config": {"model": {"epochs": 2}, "paper": {"protocol": {"bootstrap": {"samples": 200, "seed": 0,
                                                                                    "level": 0.95}}}}}


@pytest.mark.parametrize("seed2, want, decided", [([7, 10, 10], "supported", None),
                                                  ([4, 10, 10], "inconclusive", "decided by a seed: seed 2 -10.00")])
def test_a_seed_that_overrules_the_interval_is_named(tmp_path, seed2, want, decided):
    records = {("funsd", "mmlayout_control"): _record("mmlayout_control", {1: [5, 10, 10], 2: [5, 10, 10], 3: [5, 10, 10]}),
               ("funsd", "mmlayout"): _record("mmlayout", {1: [7, 10, 10], 2: seed2, 3: [7, 10, 10]})}
    verdict = judge_paper(load_claims(report.PAPER), PaperResults("mmlayout", tmp_path, records))[0]
    assert verdict.status == want
    assert verdict.interval[0] > 0  # the document interval alone would say supported
    assert (decided in verdict.evidence) if decided else ("decided" not in verdict.evidence)
    assert np.isclose(verdict.effect, 20.0 if seed2[0] == 7 else 10.0)
