"""WikiText-2 loading: the token rule, the published counts, and a clear error on a corrupt mirror."""

from __future__ import annotations

import hashlib
import os
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from replications.moe import wikitext as data
from shared.data import DataError
from tests.conftest import needs_mirror


def test_every_line_ends_with_eos():
    assert data.words(" a b \n \n c \n") == ["a", "b", "<eos>", "<eos>", "c", "<eos>"]


def test_a_truncated_mirror_file_is_refused(tmp_path, monkeypatch, fresh_cache):
    (tmp_path / "wikitext-2").mkdir()
    (tmp_path / "wikitext-2" / "wiki.train.tokens").write_text(" the cat \n")
    monkeypatch.setenv("REPLICATIONS_MIRROR", str(tmp_path))
    with pytest.raises(DataError, match="truncated"):
        data.load()


@needs_mirror
def test_official_counts_and_frequency_sorted_vocabulary(fresh_cache):
    corpus = data.load()
    assert (corpus.train.numel(), corpus.valid.numel(), corpus.test.numel()) == (2088628, 217646, 245569)
    assert len(corpus.vocab) == 33278
    counts = corpus.train.bincount(minlength=len(corpus.vocab))
    assert bool((counts[:-1] >= counts[1:]).all())  # id order = train frequency order (adaptive softmax)
    assert corpus.vocab[0] == "the"


def test_download_declares_the_official_zip_and_its_members():
    for remote in data.SPEC.files:
        assert remote.url.endswith("/wikitext-2-v1.zip") and remote.packed.member == f"wikitext-2/{remote.name}"
        assert remote.packed.sha256 == data.ZIP_SHA256 != remote.sha256  # the archive has a checksum of its own


@needs_mirror
def test_a_zip_laid_out_like_the_official_one_loads_without_a_mirror(tmp_path, monkeypatch, fresh_cache):
    mirror = Path(os.environ["REPLICATIONS_MIRROR"]) / data.SPEC.folder
    archive = tmp_path / "wikitext-2-v1.zip"
    with zipfile.ZipFile(archive, "w") as zf:  # the official layout, from the mirror's (official) members
        for remote in data.SPEC.files:
            zf.write(mirror / remote.name, remote.packed.member)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    files = tuple(replace(r, url=archive.as_uri(), packed=replace(r.packed, sha256=digest)) for r in data.SPEC.files)
    monkeypatch.setattr(data, "SPEC", replace(data.SPEC, files=files))
    monkeypatch.delenv("REPLICATIONS_MIRROR")
    corpus = data.load()
    assert (corpus.train.numel(), corpus.valid.numel(), corpus.test.numel()) == (2088628, 217646, 245569)
