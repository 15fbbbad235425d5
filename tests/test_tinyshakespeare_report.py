"""The Tiny Shakespeare part of EvoMoE's page from hand-made records: the floor margin, nanoGPT's row, the paired
validation-loss differences; absent (and the WikiText-2 page as before) without Tiny Shakespeare records."""

from __future__ import annotations

import statistics

import pytest

from replications.evomoe import measures, report
from replications.moe import charfloor
from shared.report.paper_hook import PaperResults, Table
from tests.conftest import needs_mirror


def agg(values: list[float]) -> dict:
    m, sd = statistics.mean(values), statistics.stdev(values) if len(values) > 1 else 0.0
    return {"mean": m, "std": sd, "ci95_low": m - sd, "ci95_high": m + sd, "n": len(values)}


def record(dataset: str, model: str, per_seed: dict[int, float]) -> dict:
    metric = "valid_loss" if dataset == "tinyshakespeare" else "test_ppl"
    runs = [{"seed": s, "metrics": {metric: v, "valid_ppl": 2.0},
             "train": {"steps": 300, "train_tokens": 300 * 16 * 64,
                       "curve": [{"step": 300, "valid_ppl_subset": 5.0, "active_experts": 1.0}]}} for s, v in per_seed.items()]
    return {"paper": "evomoe", "dataset": dataset, "model": model, "complete": True, "scale": "full", "runs": runs,
            "wall_seconds": 600.0, "aggregate": {metric: agg(list(per_seed.values())), "valid_ppl": agg([2.0]),
                                                 "train_tokens_per_s": agg([1400.0]), "mean_active_experts": agg([1.0])},
            "environment": {"hardware": {"cpu": "test CPU", "torch_threads": 1, "gpu": None}},
            "config": {"paper": {"protocol": {"layers": 2, "d_model": 128, "steps": 300, "batch_size": 16, "seq_len": 64,
                                              "heads": 4, "cutoffs": None, "div_value": None, "dropout": 0.0}},
                       "model": {"name": model, "gate": "dense", "ffn_hidden": 16}}}  # built for its parameter count


def results(chars: dict[str, dict[int, float]]) -> PaperResults:
    found = {("wikitext2", m): record("wikitext2", m, {1: 600.0, 2: 601.0, 3: 602.0}) for m in ("evomoe", "switch")}
    found |= {("tinyshakespeare", m): record("tinyshakespeare", m, v) for m, v in chars.items()}
    return PaperResults("evomoe", report.PAPER.parent, found)


MIRROR_FLOOR = charfloor.bigram_floor  # the real one, before the fixture below replaces it


@pytest.fixture(autouse=True)
def floors(monkeypatch):
    """Both bigram floors without the data: WikiText-2's beaten (judged), the character one at 2.48."""
    monkeypatch.setattr(measures, "wikitext_bigram", lambda records: {"valid_ppl": 1e9, "test_ppl": 1e9,
                                                                      "test_ppl_full_train": 1e9})
    monkeypatch.setattr(charfloor, "bigram_floor", lambda: 2.48)


def build(chars):
    return report.build(results(chars))


def test_char_section_with_floor_reference_and_paired_differences():
    page = build({"evomoe": {1: 1.80, 2: 1.81, 3: 1.79}, "dense": {1: 1.90, 2: 1.89, 3: 1.91},
                  "switch": {1: 1.85, 2: 1.86, 3: 1.84}})
    tables = [b for b in page.blocks if isinstance(b, Table)]
    table, paired, steps = tables[-3:]  # the last: steps to Switch's final loss, per seed
    assert steps.header[0] == "seed" and [r[0] for r in steps.rows[:3]] == [1, 2, 3]
    assert [r[0] for r in table.rows[:3]] == ["evomoe", "dense", "switch"]  # the paper's order
    assert table.rows[1][2] == f"{2.48 - 1.90:.3f}"  # dense's margin below the floor
    assert table.rows[3][0].startswith("bigram") and table.rows[4][0].startswith("nanoGPT, dense (authors_release")
    assert table.rows[4][1] == "1.88"
    assert [(r[0], r[-1]) for r in paired.rows] == [("switch", "supported"), ("dense", "supported")]
    assert float(paired.rows[0][2]) == pytest.approx(0.05)
    data = page.data["tinyshakespeare"]
    assert data["every_arm_below_floor"] is True and data["bigram_valid_loss"] == 2.48
    # WikiText-2's verdicts as without this dataset, then this dataset's (judged in tests/test_evomoe_charclaims.py)
    wikitext = [c.as_json() for c in page.claims if c.dataset == "wikitext2"]
    assert wikitext == [c.as_json() for c in build({}).claims if c.dataset == "wikitext2"] and len(wikitext) == 4
    chars = {c.id: c.status for c in page.claims if c.dataset == "tinyshakespeare"}
    assert chars == {"beats_switch_chars": "supported", "beats_base_chars": "not run", "beats_hash_chars": "not run",
                     "faster_chars": "not run"}  # these runs end at step 300, not the protocol's 2000


def test_an_arm_above_the_floor_is_said_and_no_records_no_section():
    page = build({"evomoe": {1: 2.6}, "dense": {1: 1.9}})
    assert page.data["tinyshakespeare"]["every_arm_below_floor"] is False
    plain = build({})
    assert "tinyshakespeare" not in plain.data
    assert not any(isinstance(b, str) and "Tiny Shakespeare" in b for b in plain.blocks)


@needs_mirror
def test_the_character_bigram_floor_on_the_mirror(fresh_cache):
    floor = MIRROR_FLOOR()
    # far below a uniform guess over 65 characters (4.17) and above nanoGPT's dense run (1.88)
    assert 2.3 < floor < 2.7
