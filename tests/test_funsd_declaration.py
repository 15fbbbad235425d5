"""FUNSD's one file declaration (shared.data.funsd): what each paper fetches, and the errors on a bad or absent file."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from replications.mmlayout import data as mmlayout_data
from replications.ppocrv3 import data as ppocrv3_data
from replications.ppstructurev2 import data as ppstructurev2_data
from shared.data import DataError, fetch, funsd
from tests.conftest import needs_mirror


def test_every_paper_fetches_the_shared_declaration():
    both, test = funsd.spec(), funsd.spec(("test",))
    assert len(both.files) == 398 and len(test.files) == 100  # 199 forms and 50 test forms, PNG + JSON each
    assert mmlayout_data.spec() == both
    assert ppocrv3_data.spec("funsd") == test and ppstructurev2_data.file_spec("funsd") == test
    assert set(test.files) < set(both.files)
    assert all(f.name.startswith("dataset/testing_data/") for f in test.files)
    assert "dataset/testing_data/ layout" in test.note and "{training_data,testing_data}" in both.note
    assert len({f.name for f in both.files}) == 398 and all(len(f.sha256) == 64 for f in both.files)
    with pytest.raises(DataError, match="no split dev; valid: train, test"):
        funsd.spec(("dev",))


def _mirror_with_one_form(tmp_path, monkeypatch, content: bytes):
    first = funsd.spec(("test",)).files[0]
    target = tmp_path / "mirror" / "FUNSD" / first.name
    target.parent.mkdir(parents=True)
    target.write_bytes(content)
    monkeypatch.setenv("REPLICATIONS_MIRROR", str(tmp_path / "mirror"))
    monkeypatch.setenv("REPLICATIONS_CACHE", str(tmp_path / "cache"))
    return first


def test_a_corrupted_file_is_refused(tmp_path, monkeypatch):
    first = _mirror_with_one_form(tmp_path, monkeypatch, b'{"form": []}')
    with pytest.raises(DataError, match=f"checksum mismatch for .*{first.name}"):
        fetch(funsd.spec(("test",)))


def test_a_missing_file_names_the_zip_and_the_layout(tmp_path, monkeypatch):
    def offline(*args, **kwargs):
        raise urllib.error.URLError("offline")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    monkeypatch.setenv("REPLICATIONS_MIRROR", str(tmp_path / "empty"))
    monkeypatch.setenv("REPLICATIONS_CACHE", str(tmp_path / "cache"))
    with pytest.raises(DataError, match=r"dataset 'funsd': file 'dataset/testing_data/.*' is unavailable(.|\n)*"
                                        r"guillaumejaume.github.io/FUNSD/dataset.zip(.|\n)*"
                                        r"Note: unzip dataset.zip into <mirror>/FUNSD/ \(keeps the dataset/testing_data/"):
        fetch(ppocrv3_data.spec("funsd"))


@needs_mirror
def test_annotations_pair_each_form_with_its_image():
    paths = fetch(funsd.spec(("test",)))
    forms = funsd.annotations(paths, "test")
    assert len(forms) == 50 and [f[0] for f in forms] == sorted(f[0] for f in forms)
    assert all(image.name == f"{form_id}.png" and "form" in annotation for form_id, annotation, image in forms)
    assert funsd.annotations(paths, "train") == []  # only the test split was fetched
