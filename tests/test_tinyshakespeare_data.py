"""Tiny Shakespeare's declaration and split (shared/data/tinyshakespeare.py): nanoGPT's split and ids by hand, a
damaged mirror file refused, and the official counts on the mirror."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shared.data import DataError
from shared.data import tinyshakespeare as ts
from tests.conftest import needs_mirror

# nanoGPT's data/shakespeare_char/prepare.py prints these (its trailing comment): the 65 characters in id order
NANOGPT_CHARS = "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def test_split_by_hand():
    corpus = ts.split("banana bread")  # 12 characters: int(0.9 * 12) = 10 train, 2 validation
    assert corpus.vocab == [" ", "a", "b", "d", "e", "n", "r"]
    assert corpus.train.tolist() == [2, 1, 5, 1, 5, 1, 0, 2, 6, 4] and corpus.valid.tolist() == [1, 3]
    assert corpus.test is None


def test_a_damaged_mirror_file_is_refused(tmp_path, monkeypatch, fresh_cache):
    folder = tmp_path / "tinyshakespeare"
    folder.mkdir()
    monkeypatch.setenv("REPLICATIONS_MIRROR", str(tmp_path))
    (folder / "input.txt").write_text("First Citizen:\n")
    with pytest.raises(DataError, match="truncated"):
        ts.load()
    (folder / "input.txt").write_text("x" * ts.EXPECTED["chars"])  # the right size, not the file
    with pytest.raises(DataError, match="checksum mismatch"):
        ts.load()


@needs_mirror
def test_official_file_gives_nanogpts_split_and_ids(fresh_cache):
    corpus = ts.load()
    assert "".join(corpus.vocab) == NANOGPT_CHARS
    assert (corpus.train.numel(), corpus.valid.numel()) == (1003854, 111540)  # prepare.py's printed counts
    text = (Path(os.environ["REPLICATIONS_MIRROR"]) / "tinyshakespeare" / "input.txt").read_text()
    assert "".join(corpus.vocab[i] for i in corpus.valid[:40].tolist()) == text[1003854:1003894]


def test_a_paper_refuses_a_corpus_it_does_not_list():
    from replications.moe import corpora

    with pytest.raises(ValueError, match="ta_moe has no loader for dataset 'tinyshakespeare'; valid: wikitext2"):
        corpora.load_for({"name": "tinyshakespeare"}, "ta_moe", ["wikitext2"])
    with pytest.raises(ValueError, match="valid: wikitext2, tinyshakespeare"):
        corpora.load_for({"name": "wikitext103"}, "evomoe", ["wikitext2", "tinyshakespeare"])
