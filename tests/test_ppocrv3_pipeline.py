"""run.measure, the Replication methods and the page end to end on a hand-made dataset with planted engines
(no models, no Tesseract, no mirror)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import cv2
import datasets
import numpy as np
import pytest
from omegaconf import OmegaConf

from replications.ocr.engines import Output
from replications.ppocrv3 import REPLICATION, report, run
from replications.ppocrv3.protocol import Regions
from shared.claims import paper_claims
from shared.report.paper_hook import Figure, PaperResults, Table
from shared.runner import stored
from shared.verdict import STATUSES
from tests.runs import run_of

BOXES = [[10, 10, 90, 10, 90, 30, 10, 30], [10, 50, 70, 50, 70, 70, 10, 70], [120, 10, 150, 10, 150, 30, 120, 30]]
TEXTS = ["Hello", "world", "###"]


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "img_1.png"
    cv2.imwrite(str(path), np.full((100, 200, 3), 255, np.uint8))
    rows = [{"image_id": f"img_{i}", "image_path": str(path), "polygons": BOXES, "texts": TEXTS,
             "dont_care": [t == "###" for t in TEXTS]} for i in (1, 2)]
    cfg = OmegaConf.create({"dataset": {"name": "icdar2015", "text_match": "rrc", "example_images": ["img_1"]},
                            "model": {"name": "oracle"},
                            "paper": {"protocol": {"iou_threshold": 0.5, "area_precision": 0.5, "comparable_speed": 1.5,
                                                         "bootstrap": {"samples": 200, "seed": 0, "level": 0.95}}}})
    return cfg, datasets.Dataset.from_list(rows)


class Planted:
    """Returns the ground truth, optionally shifted right by `dx` pixels or with corrupted text."""

    def __init__(self, dx: float = 0.0, corrupt: bool = False):
        self.dx, self.corrupt = dx, corrupt

    def __call__(self, img: np.ndarray) -> Output:
        polys = [np.asarray(b, float).reshape(4, 2) + [self.dx, 0] for b in BOXES[:2]]
        texts = [t[::-1] if self.corrupt else t for t in TEXTS[:2]]
        words = Regions(polys, texts)
        return Output(words, words, {"det": 0.01, "rec": 0.02, "pipeline": 0.03})


def test_oracle_scores_100_and_returns_details(tiny):
    cfg, ds = tiny
    m, details = run.measure(cfg, Planted(), ds)
    assert m["test_box_hmean"] == pytest.approx(100) and m["test_e2e_hmean"] == pytest.approx(100)
    assert m["test_detector_hmean"] == pytest.approx(100) and m["test_e2e_hmean_wordsplit"] == pytest.approx(100)
    assert m["test_cer"] == 0 and m["latency_ms_median"] == pytest.approx(30)
    assert m["det_latency_ms_p90"] == pytest.approx(10)
    assert m["test_e2e_hmean_ci_low"] == pytest.approx(100) and m["test_e2e_hmean_ci_high"] == pytest.approx(100)
    assert details["counts"]["lines"]["gt_care"] == 4 and "img_1" in details["examples"]
    assert details["per_image"]["lines"] == [[2, 2, 2, 2], [2, 2, 2, 2]]
    json.dumps(details)  # goes into the result record as it is


def test_train_stores_the_details_and_evaluate_returns_its_metrics(tiny, tmp_path):
    cfg, ds = tiny
    spec = run_of(cfg, output_dir=tmp_path / "out")
    summary = REPLICATION.train(spec, Planted(dx=60), ds, 1, lambda m, s: None)
    metrics = REPLICATION.evaluate(spec, Planted(), ds, 1, summary)  # scores what train measured, runs nothing
    assert metrics["test_box_hmean"] == 0 and metrics["latency_ms_median"] == pytest.approx(30)
    kept = stored(summary)
    assert "_metrics" not in kept and kept["details"]["per_image"]["lines"] == [[2, 2, 0, 0], [2, 2, 0, 0]]
    assert kept["trained"] is False and kept["images"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["img_1.png"]  # nothing written by train or evaluate


def test_shifted_engine_scores_zero(tiny):
    cfg, ds = tiny
    m = run.measure(cfg, Planted(dx=60), ds)[0]
    assert m["test_box_hmean"] == 0 and m["test_e2e_hmean"] == 0 and math.isnan(m["test_cer"])


def test_corrupted_text_fails_end_to_end(tiny):
    cfg, ds = tiny
    m = run.measure(cfg, Planted(corrupt=True), ds)[0]
    assert m["test_box_hmean"] == pytest.approx(100) and m["test_e2e_hmean"] == 0
    assert m["test_cer"] > 0


class LinesAndWords:
    """An engine whose output line spans both ground-truth words and whose detector also found a stray box:
    the three views must score differently, each from its own regions."""

    def __call__(self, img: np.ndarray) -> Output:
        line = Regions([np.array([[10, 10], [90, 10], [90, 70], [10, 70]], float)], ["Hello world"])
        words = Regions([np.asarray(b, float).reshape(4, 2) for b in BOXES[:2]], TEXTS[:2])
        detector = Regions(line.polygons + [np.array([[150, 80], [190, 80], [190, 95], [150, 95]], float)], ["", ""])
        return Output(words, line, {"pipeline": 0.03}, detector)


def test_views_are_scored_separately(tiny):
    cfg, ds = tiny
    m = run.measure(cfg, LinesAndWords(), ds)[0]
    assert m["test_e2e_hmean"] == 0 and m["test_box_hmean"] == 0  # one line over two words matches neither
    assert m["test_e2e_hmean_wordsplit"] == pytest.approx(100)
    assert m["test_detector_precision"] == 0 and "test_detector_hmean" in m


def row(matched: list[int], ms: float = 330.0) -> dict:
    """An engine's record: per image 10 care words, 10 detections, `matched[i]` end-to-end matches."""
    per_image = [[10, 10, 10, k] for k in matched]
    total = sum(matched)
    metrics = {"test_e2e_hmean": 100 * total / (10 * len(matched)), "test_e2e_hmean_wordsplit": 0.0,
               "latency_ms_median": ms}
    return {"runs": [{"seed": 1, "metrics": metrics,
                      "train": {"details": {"per_image": {"lines": per_image, "words": per_image}}}}]}


def judged(new: dict, old: dict) -> dict[str, object]:
    """The paper's claims (paper.yaml specs, measures.py) on ICDAR 2015 for two planted engines."""
    results = PaperResults("ppocrv3", Path("/nonexistent"), {("icdar2015", "ppocrv3"): new, ("icdar2015", "ppocrv2"): old})
    return {(c.id, c.dataset): c for c in paper_claims(report.PAPER, results)}


def test_claim_verdict_follows_the_bootstrap_and_speed_is_its_own_claim():
    rng = np.random.default_rng(1)
    base = rng.integers(2, 9, 200).tolist()
    better = [min(k + 2, 10) for k in base]  # +2 words on every image: a clear, consistent gain
    noisy = [k + (1 if i % 2 else -1) for i, k in enumerate(base)]  # +1/-1 alternately: no gain overall

    def status(new: dict, old: dict) -> str:
        return judged(new, old)["e2e_hmean", "icdar2015"].status

    assert status(row(better), row(base)) == "supported"
    c = judged(row(noisy), row(base))["e2e_hmean", "icdar2015"]
    assert c.status == "inconclusive" and c.interval[0] < 0 < c.interval[1] and c.n == 200
    assert status(row(base), row(better)) == "contradicted"
    slow = judged(row(better, 990), row(base))  # 3x slower: the accuracy claim stands, the speed claim fails
    assert slow["e2e_hmean", "icdar2015"].status == "supported"
    speed = slow["comparable_speed", "icdar2015"]
    assert speed.status == "contradicted" and speed.effect == pytest.approx(3) and speed.interval is None
    assert "slower: 3.00x the latency (990 vs 330 ms, main run)" in speed.evidence
    assert judged(row(better, 400), row(base))["comparable_speed", "icdar2015"].status == "supported"
    missing = judged(row(base), {})  # no PP-OCRv2 record: not run, saying how to run it
    assert missing["e2e_hmean", "icdar2015"].status == "not run"
    assert "make replicate-ppocrv3 dataset=icdar2015" in missing["e2e_hmean", "icdar2015"].evidence
    assert missing["comparable_speed", "funsd"].status == "not run"


def record(cfg, ds, engine, model: str, dataset: str = "icdar2015") -> dict:
    """A result record as the runner writes it: the stored summary under runs[0].train."""
    cfg = cfg.copy()
    cfg.model.name = model
    spec = run_of(cfg)
    summary = REPLICATION.train(spec, engine, ds, 1, lambda m, s: None)
    metrics = REPLICATION.evaluate(spec, engine, ds, 1, summary)
    return {"paper": "ppocrv3", "dataset": dataset, "model": model, "complete": True,
            "config": {"paper": {"protocol": {"comparable_speed": 1.5,
                                              "bootstrap": {"samples": 200, "seed": 0, "level": 0.95}}}},
            "runs": [{"seed": 1, "metrics": metrics, "train": stored(summary)}]}


def test_page_from_records(tiny, tmp_path):
    cfg, ds = tiny
    records = {("icdar2015", m): record(cfg, ds, e, m)
               for m, e in (("ppocrv3", Planted()), ("ppocrv2", Planted(corrupt=True)))}
    page = report.build(PaperResults("ppocrv3", tmp_path / "ppocrv3", records))
    statuses = {(c.id, c.dataset): c.status for c in page.claims}
    assert all(s in STATUSES for s in statuses.values())
    # ICDAR 2015: v3 reads every word, v2 none, at the same speed; FUNSD was not measured
    assert statuses == {("e2e_hmean", "icdar2015"): "supported", ("e2e_hmean", "funsd"): "not run",
                        ("e2e_hmean_wordsplit", "icdar2015"): "supported", ("e2e_hmean_wordsplit", "funsd"): "not run",
                        ("comparable_speed", "icdar2015"): "supported", ("comparable_speed", "funsd"): "not run"}
    assert page.claims[0].effect == pytest.approx(100) and page.claims[0].kind == "paper"
    tables = [b for b in page.blocks if isinstance(b, Table)]
    assert ["PP-OCRv2", "0.0 [0.0, 0.0]"] == tables[0].rows[0][:2]
    assert ["PP-OCRv3", "100.0 [100.0, 100.0]"] == tables[0].rows[1][:2]
    text = "\n".join(b for b in page.blocks if isinstance(b, str))
    assert "internal" in text and "Standard protocol: not measured." in text  # PP-OCRv4 over PP-OCRv3
    assert [f.name for f in page.blocks if isinstance(f, Figure)] == ["figures/pr_vs_latency.png",
                                                                     "figures/examples_icdar2015.png"]
    fig = page.figures()[0].draw()
    assert len(fig.axes) == 2
    json.dumps(page.data)  # claims.json holds it


def test_page_reads_committed_details_and_interleaved_latency(tiny, tmp_path):
    cfg, ds = tiny
    folder = tmp_path / "ppocrv3"
    records = {}
    for model, engine in (("ppocrv3", Planted()), ("ppocrv2", Planted(corrupt=True))):
        rec = record(cfg, ds, engine, model)
        details = rec["runs"][0]["train"].pop("details")  # a run made before the details went into the record
        (folder / "icdar2015").mkdir(parents=True, exist_ok=True)
        (folder / "icdar2015" / f"{model}.details.json").write_text(json.dumps(details))
        records["icdar2015", model] = rec
    records["funsd", "ppocrv3"] = record(cfg, ds, Planted(), "ppocrv3", "funsd")
    records["funsd", "ppocrv3"]["runs"][0]["train"].pop("details")  # only an older details file: left out
    (folder / "funsd").mkdir()
    (folder / "funsd" / "ppocrv3.details.json").write_text(json.dumps({"model": "ppocrv3", "metrics": {}}))
    inter = {"threads": 1, "load_average_before": [1, 1, 1], "load_average_after": [2, 2, 2],
             "datasets": {"icdar2015": {"images": 2, "latency": {
                 "ppocrv3": {"latency_ms_median": 50.0, "latency_ms_p90": 60.0},
                 "ppocrv2": {"latency_ms_median": 10.0, "latency_ms_p90": 12.0}}}}}
    (folder / report.INTERLEAVED).write_text(json.dumps(inter))
    page = report.build(PaperResults("ppocrv3", folder, records))
    tables = [b for b in page.blocks if isinstance(b, Table)]
    assert ["PP-OCRv3", "—", "—", "50 / 60"] in tables[-1].rows  # the interleaved table
    # 5x slower in the interleaved benchmark: the speed claim fails, the accuracy claims stand on their own
    found = {(c.id, c.dataset): c for c in page.claims}
    assert found["e2e_hmean", "icdar2015"].status == "supported"
    assert found["comparable_speed", "icdar2015"].status == "contradicted"
    assert "slower: 5.00x the latency (50 vs 10 ms, interleaved benchmark)" in found["comparable_speed", "icdar2015"].evidence
    assert set(page.data["metrics"]) == {"icdar2015"}
    assert report.build(PaperResults("ppocrv3", tmp_path / "none", {})) is None
