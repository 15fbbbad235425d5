"""WikiText-2 loading: the token rule, the published counts, and a clear error on a corrupt mirror."""

from __future__ import annotations

import pytest

from replications.evomoe import data
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
