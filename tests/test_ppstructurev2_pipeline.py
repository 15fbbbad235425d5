"""The harness end to end on one table and one page (real models and data when present), the full-split loader
on a planted PubTabNet file, and the clear error without the download."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from replications.ppstructurev2 import assets, data
from shared.data import DataError

MIRROR = os.environ.get("REPLICATIONS_MIRROR")


def test_full_split_missing_names_the_url_and_the_offline_alternative(tmp_path, monkeypatch):
    monkeypatch.setenv("REPLICATIONS_CACHE", str(tmp_path))
    monkeypatch.setenv("REPLICATIONS_MIRROR", str(tmp_path / "mirror"))
    with pytest.raises(DataError, match="pubtabnet.tar.gz.*\n?.*pubtabnet_mini|dataset=pubtabnet_mini") as err:
        data.pubtabnet_root()
    assert data.PUBTABNET_URL in str(err.value)


def planted_pubtabnet(root: Path, n_val: int, with_images: bool = True) -> None:
    (root / "val").mkdir(parents=True)
    lines = []
    for i in range(n_val + 1):
        split = "val" if i < n_val else "train"
        item = {"filename": f"t{i}.png", "split": split, "imgid": i, "html": {
            "structure": {"tokens": ["<thead>", "<tr>", "<td>", "</td>", "<td", ' colspan="2"', ">", "</td>", "</tr>",
                                     "</thead>"]},
            "cells": [{"tokens": ["<b>", "A", "</b>"], "bbox": [0, 0, 5, 5]}, {"tokens": ["b"], "bbox": [6, 0, 9, 5]}]}}
        lines.append(json.dumps(item))
        if with_images and split == "val":
            (root / "val" / f"t{i}.png").write_bytes(b"png")
    (root / "PubTabNet_2.0.0.jsonl").write_text("\n".join(lines) + "\n")


def test_full_split_loader_rebuilds_html_and_checks_the_table_count(tmp_path, monkeypatch):
    root = tmp_path / "pubtabnet"
    planted_pubtabnet(root, 2)
    monkeypatch.setattr(data, "PUBTABNET_VAL_TABLES", 2)
    rows = data.read_pubtabnet_val(root)
    assert [r["image_id"] for r in rows] == ["t0.png", "t1.png"]  # the train row is left out
    assert rows[0]["html"] == ('<html><body><table><thead><tr><td><b>A</b></td><td colspan="2">b</td></tr></thead>'
                               "</table></body></html>")
    assert rows[0]["structure"][2] == "<td></td>" and rows[0]["type"] == "complex"
    monkeypatch.setattr(data, "PUBTABNET_VAL_TABLES", 9115)
    with pytest.raises(DataError, match="has 2 validation tables"):
        data.read_pubtabnet_val(root)


def test_full_split_loader_refuses_a_missing_image(tmp_path, monkeypatch):
    root = tmp_path / "pubtabnet"
    planted_pubtabnet(root, 1, with_images=False)
    monkeypatch.setattr(data, "PUBTABNET_VAL_TABLES", 1)
    with pytest.raises(DataError, match="is missing"):
        data.read_pubtabnet_val(root)


@pytest.mark.slow
@pytest.mark.skipif(not MIRROR, reason="REPLICATIONS_MIRROR is not set")
@pytest.mark.parametrize("dataset", ["pubtabnet_mini", "publaynet_examples"])
def test_smoke_run_through_the_harness(dataset, tmp_path, monkeypatch):
    from hydra import compose, initialize_config_dir

    import replications
    from shared.runner import PROJECT_ROOT, run
    from shared.smoke import apply_smoke

    if not (assets.available("slanet_en") and assets.available("layout_cdla")):
        pytest.skip("PP-StructureV2 models are not in the store (python -m replications.ppstructurev2.assets)")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("WANDB_MODE", "disabled")
    with initialize_config_dir(config_dir=str(PROJECT_ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["paper=ppstructurev2", f"dataset={dataset}", f"model=ppstructurev2/{dataset}",
                                           "scale=smoke", "tracker=none", f"results_dir={tmp_path}"])
    apply_smoke(cfg)
    rep = replications.get("ppstructurev2")
    record = run(cfg, rep)
    m = record["runs"][0]["metrics"]
    assert m["latency_ms_mean"] > 0
    if dataset == "pubtabnet_mini":  # the first table (simple) is decoded exactly by the released model
        assert m["test_acc"] == 100.0 and m["test_teds_oracle"] == 100.0 and 0 < m["test_teds"] <= 100
    else:
        assert m["detections_per_page"] > 0
    from shared.data import cache_dir

    details = next((tmp_path / "ppstructurev2" / dataset).glob("*.details.json")).read_text()
    assert MIRROR not in details and str(cache_dir()) not in details  # no machine paths in what is committed
    rep.after_replicate(cfg)
    readme = (tmp_path / "ppstructurev2" / "README.md").read_text()
    assert "weights not obtainable" in readme
