"""DOTA Task-1 evaluation on the devkit's 7 real label files; the split / merge path; the loaders' errors."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from replications.ppyoloe_r import dota_data
from replications.ppyoloe_r.dota_eval import (
    DOTA_V1_CLASSES,
    Objects,
    as_detections,
    class_ap,
    evaluate,
    parse_label_text,
    voc07_ap,
)
from replications.ppyoloe_r.dota_split import merge, poly_nms, split, windows
from shared.data import DataError

MIRROR = Path(os.environ.get("REPLICATIONS_MIRROR") or Path(__file__).resolve().parents[2] / "shared" / "data")
needs_examples = pytest.mark.skipif(not (MIRROR / "DOTA-examples" / "labelTxt" / "P0706.txt").exists(),
                                    reason=f"{MIRROR}/DOTA-examples is absent: set REPLICATIONS_MIRROR to a data mirror")


@pytest.fixture
def labels(monkeypatch):
    monkeypatch.setenv("REPLICATIONS_MIRROR", str(MIRROR))
    return dota_data.example_labels()


@needs_examples
def test_example_labels_parse_as_documented(labels):
    assert len(labels) == 7
    assert sum(len(o.classes) for o in labels.values()) == 984
    assert sum(sum(o.difficult) for o in labels.values()) == 67
    counts = {c: sum(o.classes.count(c) for o in labels.values()) for c in ("ship", "storage-tank", "plane")}
    assert counts == {"ship": 561, "storage-tank": 255, "plane": 22}


@needs_examples
def test_ground_truth_as_detections_scores_100(labels):
    out = evaluate(labels, as_detections(labels), DOTA_V1_CLASSES)
    assert out["map"] == pytest.approx(100.0)
    assert out["classes_scored"] == 12  # 12 of the 15 classes occur in the examples; the others are left out
    assert np.isnan(out["ap/helicopter"])


def _dets_with_flags(labels, cls):
    """(detection, difficult) for every object of a class, straight from the labels."""
    return [((image, 1.0, p), d) for image, o in labels.items() for p, c, d in zip(o.polys, o.classes, o.difficult)
            if c == cls]


@needs_examples
def test_missing_half_of_a_class_gives_six_elevenths(labels):
    flagged = _dets_with_flags(labels, "ship")
    n_pos = sum(1 for _, d in flagged if not d)
    kept, dropped = [], 0
    for det, difficult in flagged:  # drop non-difficult ships until just over half of them remain
        if not difficult and dropped < n_pos // 2:
            dropped += 1
            continue
        kept.append(det)
    ap, npos = class_ap(labels, kept, "ship")
    assert npos == n_pos == 555 and dropped == 277
    assert ap == pytest.approx(6 / 11)  # recall 278/555 > 0.5 at precision 1: the points 0, 0.1, ..., 0.5
    easy_kept = [d for d, hard in flagged if not hard and any(d is k for k in kept)]
    fewer = [k for k in kept if k is not easy_kept[-1]]  # one true positive fewer: recall 277/555 < 0.5
    assert class_ap(labels, fewer, "ship")[0] == pytest.approx(5 / 11)


@needs_examples
def test_false_positives_above_every_true_one(labels):
    dets = as_detections(labels, score=0.5)["plane"]
    n = len(dets)  # 22 planes, none difficult
    far = [("P0706", 0.9, dets[0][2] + 5000.0), ("P0706", 0.8, dets[1][2] + 5000.0)]
    ap, npos = class_ap(labels, far + dets, "plane")
    assert npos == n
    # after k true positives precision is k / (k + 2), rising with k: the interpolated precision (the best at
    # recall >= t) is n / (n + 2) at every one of the 11 points
    assert ap == pytest.approx(n / (n + 2))
    # the two false positives ranked last instead cost nothing: precision 1 up to recall 1
    assert class_ap(labels, dets + [(i, 0.1, p) for i, _, p in far], "plane")[0] == pytest.approx(1.0)


@needs_examples
def test_a_shifted_class_scores_zero_and_the_mean_drops_by_its_share(labels):
    dets = as_detections(labels)
    dets["storage-tank"] = [(i, s, p + 3000.0) for i, s, p in dets["storage-tank"]]
    out = evaluate(labels, dets, DOTA_V1_CLASSES)
    assert out["ap/storage-tank"] == 0.0
    assert out["map"] == pytest.approx(100.0 * 11 / 12)


@needs_examples
def test_difficult_objects_are_neither_true_nor_false_positives(labels):
    flagged = _dets_with_flags(labels, "ship")
    easy = [d for d, hard in flagged if not hard]
    hard = [d for d, hard in flagged if hard]
    assert hard  # the examples hold difficult ships
    ap_easy, _ = class_ap(labels, easy, "ship")
    ap_all, _ = class_ap(labels, hard + easy, "ship")  # difficult matches ranked first change nothing
    assert ap_easy == ap_all == pytest.approx(1.0)
    # counted as positives they would cost recall: the same detections against labels with the flags cleared
    cleared = {k: Objects(o.polys, o.classes) for k, o in labels.items()}
    assert class_ap(cleared, easy, "ship")[0] < 1.0
    # a difficult-only class counts no positives
    only = {"a": Objects(np.array([[0, 0, 10, 0, 10, 10, 0, 10]]), ["ship"], [True])}
    assert np.isnan(class_ap(only, [("a", 1.0, only["a"].polys[0])], "ship")[0])


def test_duplicate_detection_is_a_false_positive():
    gt = {"a": Objects(np.array([[0, 0, 10, 0, 10, 10, 0, 10]]), ["plane"])}
    box = gt["a"].polys[0]
    ap, _ = class_ap(gt, [("a", 0.9, box), ("a", 0.8, box)], "plane")
    assert ap == pytest.approx(1.0)  # precision 1 at recall 1 comes first; the duplicate only follows
    ap, _ = class_ap(gt, [("a", 0.9, box + 20), ("a", 0.8, box)], "plane")
    assert ap == pytest.approx(0.5)  # the one TP comes at precision 1/2


def test_voc07_hand_case():
    rec = np.array([0.2, 0.4, 0.4, 0.8])
    prec = np.array([1.0, 1.0, 0.67, 0.8])
    assert voc07_ap(rec, prec) == pytest.approx((5 * 1.0 + 4 * 0.8) / 11)


def test_parse_errors_name_the_line():
    with pytest.raises(ValueError, match="line 3"):
        parse_label_text("imagesource:GoogleEarth\ngsd:0.1\n1 2 3 4 5 6 7 ship 0\n")
    with pytest.raises(ValueError, match="non-numeric"):
        parse_label_text("1 2 3 4 5 6 7 x ship 0\n")


def test_windows_follow_the_devkit():
    assert windows(2000, 500) == [(0, 0), (824, 0), (976, 0)]
    assert windows(1024, 1024) == [(0, 0)]
    assert windows(600, 3000, size=1024, gap=200) == [(0, 0), (0, 824), (0, 1648), (0, 1976)]


def test_split_keeps_whole_objects_and_marks_cut_ones_difficult():
    objs = Objects(np.array([[10, 10, 50, 10, 50, 30, 10, 30],          # inside the first patch only
                             [1000, 10, 1060, 10, 1060, 30, 1000, 30],  # 40 of 60 px in patch 0 -> not kept there
                             [820, 10, 1030, 10, 1030, 30, 820, 30]]),  # 204 of 210 px inside patch 0: cut, difficult
                   ["plane", "ship", "bridge"])
    patches = split("P1", objs, 1800, 900, size=1024, gap=200)
    first = patches[0]
    assert first.name == "P1__1__0___0"
    assert first.objects.classes == ["plane", "bridge"] and first.objects.difficult == [False, True]
    second = next(p for p in patches if p.left == 776)
    assert second.objects.classes == ["ship", "bridge"] and second.objects.difficult == [False, False]
    np.testing.assert_allclose(second.objects.polys[0], objs.polys[1] - np.tile([776, 0], 4))


@needs_examples
def test_split_then_merge_returns_the_image_detections(labels):
    """Ground truth cut into 512 patches (gap 200), written back as detections and merged, equals the full
    image's objects that lie whole inside some patch, after the same NMS: nothing lost or duplicated."""
    img = labels["P0706"]
    objs = Objects(img.polys, img.classes)
    width, height, size = 1111, 1182, 512
    patch_dets: dict[str, list] = {}
    for p in split("P0706", objs, width, height, size=size, gap=200):
        for poly, c, d in zip(p.objects.polys, p.objects.classes, p.objects.difficult):
            if not d:  # whole objects only
                patch_dets.setdefault(c, []).append((p.name, 1.0, poly))
    merged = merge(patch_dets)
    wins = [(x, y, min(x + size, width - 1), min(y + size, height - 1)) for x, y in windows(width, height, size, 200)]

    def whole(poly):
        return any(poly[0::2].min() >= x0 and poly[0::2].max() <= x1 and poly[1::2].min() >= y0
                   and poly[1::2].max() <= y1 for x0, y0, x1, y1 in wins)

    assert not all(whole(p) for p in objs.polys)  # some harbours are larger than a patch
    for c in set(objs.classes):
        full = objs.polys[[i for i, k in enumerate(objs.classes) if k == c and whole(objs.polys[i])]]
        keep = poly_nms(full, np.ones(len(full))) if len(full) else []
        got = sorted(map(tuple, np.round([d[2] for d in merged.get(c, [])], 3)))
        want = sorted(map(tuple, np.round(full[keep], 3))) if len(full) else []
        assert got == want, c


def test_full_dota_is_refused_with_a_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("REPLICATIONS_MIRROR", str(tmp_path))
    with pytest.raises(DataError, match="captain-whu.github.io/DOTA"):
        dota_data.full_root()
    (tmp_path / "DOTA-v1.0" / "train" / "images").mkdir(parents=True)
    (tmp_path / "DOTA-v1.0" / "train" / "images" / "P0001.png").write_bytes(b"")
    with pytest.raises(DataError, match="holds 1 .png images; DOTA-v1.0 train has 1411"):
        dota_data.read_split(dota_data.full_root(), "train")


def test_missing_label_file_is_refused(tmp_path):
    (tmp_path / "val" / "images").mkdir(parents=True)
    (tmp_path / "val" / "images" / "P0003.png").write_bytes(b"")
    monkey_counts = dict(dota_data.FULL_COUNTS)
    try:
        dota_data.FULL_COUNTS["val"] = 1
        with pytest.raises(DataError, match="P0003.txt is missing"):
            dota_data.read_split(tmp_path, "val")
    finally:
        dota_data.FULL_COUNTS.update(monkey_counts)


@needs_examples
@pytest.mark.slow
def test_full_dota_recipe_runs_on_a_devkit_shaped_folder(monkeypatch, tmp_path):
    """The dota_v1 path (load -> patches -> train -> split/merge evaluation) on a DOTA-v1.0-shaped folder made of
    the two example images, at 256-pixel patches: the code a user with DOTA runs, minus the scale."""
    import shutil

    import torch
    from omegaconf import OmegaConf

    from replications.ppyoloe_r import REPLICATION
    from tests.runs import run_of

    monkeypatch.setenv("REPLICATIONS_MIRROR", str(MIRROR))
    images, labels_dir = dota_data.example_images(), MIRROR / "DOTA-examples" / "labelTxt"
    fake = tmp_path / "mirror"
    for split_name in ("train", "val"):
        (fake / "DOTA-v1.0" / split_name / "images").mkdir(parents=True)
        (fake / "DOTA-v1.0" / split_name / "labelTxt").mkdir(parents=True)
        for stem, path in images.items():
            shutil.copy(path, fake / "DOTA-v1.0" / split_name / "images" / path.name)
            shutil.copy(labels_dir / f"{stem}.txt", fake / "DOTA-v1.0" / split_name / "labelTxt" / f"{stem}.txt")
    monkeypatch.setenv("REPLICATIONS_MIRROR", str(fake))
    monkeypatch.setattr(dota_data, "FULL_COUNTS", {"train": 2, "val": 2})
    cfg = OmegaConf.create({"dataset": {"name": "dota_v1", "patch_size": 256, "gap": 64}, "device": "cpu",
                            "scale": {"name": "smoke"},
                            "model": {"name": "ppyoloe_r", "size": "s", "angle": "dfl", "box": "probiou", "steps": 1,
                                      "batch_size": 2, "lr": 1e-3, "weight_decay": 0.0, "warmup": 1},
                            "paper": {"protocol": {"curve_seed": 1, "curve_model": "ppyoloe_r", "curve_every": 1}}})
    run = run_of(cfg)
    data = REPLICATION.load_data(run)
    assert len(data["train"]) > 10 and set(data["label_sha256"]) == {"train", "val"}
    image, boxes, lab = data["train"].item(0)
    assert image.shape == (3, 256, 256) and boxes.shape[1] == 5 and len(lab) == len(boxes)
    torch.manual_seed(0)
    model = REPLICATION.build_model(run, data)
    summary = REPLICATION.train(run, model, data, seed=1, log=lambda *a: None)
    assert summary["label_sha256"] == data["label_sha256"]
    metrics = REPLICATION.evaluate(run, model, data, 1, summary)
    assert 0.0 <= metrics["val_map"] <= 100.0
