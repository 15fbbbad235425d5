"""run.evaluate end to end on a hand-made dataset with planted engines (no models, no Tesseract, no mirror)."""

from __future__ import annotations

import json
import math

import cv2
import datasets
import numpy as np
import pytest
from omegaconf import OmegaConf

from replications.ocr.engines import Output
from replications.ppocrv3 import figures, run
from replications.ppocrv3.protocol import Regions

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


def test_oracle_scores_100_and_writes_details(tiny, tmp_path):
    cfg, ds = tiny
    details = tmp_path / "icdar2015" / "oracle.details.json"
    m = run.evaluate(cfg, Planted(), ds, details)
    assert m["test_box_hmean"] == pytest.approx(100) and m["test_e2e_hmean"] == pytest.approx(100)
    assert m["test_detector_hmean"] == pytest.approx(100) and m["test_e2e_hmean_wordsplit"] == pytest.approx(100)
    assert m["test_cer"] == 0 and m["latency_ms_median"] == pytest.approx(30)
    assert m["det_latency_ms_p90"] == pytest.approx(10)
    assert m["test_e2e_hmean_ci_low"] == pytest.approx(100) and m["test_e2e_hmean_ci_high"] == pytest.approx(100)
    saved = json.loads(details.read_text())
    assert saved["counts"]["lines"]["gt_care"] == 4 and "img_1" in saved["examples"]
    assert saved["per_image"]["lines"] == [[2, 2, 2, 2], [2, 2, 2, 2]]


def test_shifted_engine_scores_zero(tiny):
    cfg, ds = tiny
    m = run.evaluate(cfg, Planted(dx=60), ds, None)
    assert m["test_box_hmean"] == 0 and m["test_e2e_hmean"] == 0 and math.isnan(m["test_cer"])


def test_corrupted_text_fails_end_to_end(tiny):
    cfg, ds = tiny
    m = run.evaluate(cfg, Planted(corrupt=True), ds, None)
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
    m = run.evaluate(cfg, LinesAndWords(), ds, None)
    assert m["test_e2e_hmean"] == 0 and m["test_box_hmean"] == 0  # one line over two words matches neither
    assert m["test_e2e_hmean_wordsplit"] == pytest.approx(100)
    assert m["test_detector_precision"] == 0 and "test_detector_hmean" in m


def row(matched: list[int], ms: float = 330.0) -> dict:
    """An engine's details: per image 10 care words, 10 detections, `matched[i]` end-to-end matches."""
    per_image = [[10, 10, 10, k] for k in matched]
    total = sum(matched)
    return {"metrics": {"test_e2e_hmean": 100 * total / (10 * len(matched)), "latency_ms_median": ms},
            "per_image": {"lines": per_image, "words": per_image}}


def test_claim_verdict_follows_the_bootstrap():
    rng = np.random.default_rng(1)
    base = rng.integers(2, 9, 200).tolist()
    better = [min(k + 2, 10) for k in base]  # +2 words on every image: a clear, consistent gain
    noisy = [k + (1 if i % 2 else -1) for i, k in enumerate(base)]  # +1/-1 alternately: no gain overall
    claim = figures.claim
    assert "**holds**" in claim({"ppocrv3": row(better), "ppocrv2": row(base)}, "ppocrv3", "ppocrv2", 1.5)
    text = claim({"ppocrv3": row(noisy), "ppocrv2": row(base)}, "ppocrv3", "ppocrv2", 1.5)
    assert "**is not shown**" in text and "includes 0" in text
    assert "**does not hold**" in claim({"ppocrv3": row(base), "ppocrv2": row(better)}, "ppocrv3", "ppocrv2", 1.5)
    assert "slower" in claim({"ppocrv3": row(better, 990), "ppocrv2": row(base)}, "ppocrv3", "ppocrv2", 1.5)
    assert "not measured" in claim({"ppocrv3": row(base)}, "ppocrv3", "ppocrv2", 1.5)


def test_table_and_plot_from_details(tiny, tmp_path):
    cfg, ds = tiny
    root = tmp_path / "res"
    cfg.model.name = "ppocrv3"
    run.evaluate(cfg, Planted(), ds, root / "icdar2015" / "ppocrv3.details.json")
    details = figures.load_details(root)
    text = figures.table(details, 1.5)
    assert "internal" in text and "| PP-OCRv3 | 100.0 [100.0, 100.0] |" in text
    assert text.index("Standard protocol") < text.index("Word-split protocol")
    inter = {"threads": 1, "load_average_before": [1, 1, 1], "load_average_after": [2, 2, 2],
             "datasets": {"icdar2015": {"images": 2, "latency": {"ppocrv3": {"latency_ms_median": 5.0,
                                                                             "latency_ms_p90": 6.0}}}}}
    assert "| PP-OCRv3 | — | — | 5 / 6 |" in figures.table(details, 1.5, inter)
    old = root / "funsd" / "ppocrv3.details.json"  # a details file from before per-image counts is skipped
    old.parent.mkdir(parents=True)
    old.write_text(json.dumps({"model": "ppocrv3", "metrics": {}}))
    assert "funsd" not in figures.load_details(root)
    figures.plot_pr(details, root / "pr.png")
    assert (root / "pr.png").stat().st_size > 1000
