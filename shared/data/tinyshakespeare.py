"""Tiny Shakespeare (Karpathy's char-rnn corpus: 1,115,394 ASCII characters) as character-id streams.

The one declaration of the file for every paper. Split and vocabulary follow nanoGPT's
data/shakespeare_char/prepare.py (read, not copied): the first int(0.9 n) characters train, the rest validation
(1,003,854 / 111,540); the vocabulary is the 65 distinct characters of the whole file sorted by code point, so
id i is nanoGPT's id i. There is no test split: nanoGPT reports validation loss, and so does the suite.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from shared.data.fetch import DataError, DatasetSpec, RemoteFile, fetch

URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
SPEC = DatasetSpec(
    name="tinyshakespeare",
    folder="tinyshakespeare",
    files=(RemoteFile("input.txt", URL, "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed", 1115394,
                      git_blob="7dcb3a2d4cc3b48b6283dd46870bfeb78f88aac9"),),
    note="a mirror holds char-rnn's data/tinyshakespeare/input.txt unchanged in <mirror>/tinyshakespeare/.",
)
TRAIN_FRACTION = 0.9  # nanoGPT prepare.py: train_data = data[:int(n*0.9)]
EXPECTED = {"chars": 1115394, "vocab": 65, "train": 1003854, "valid": 111540}


@dataclass
class CharCorpus:
    vocab: list[str]  # id -> character
    train: torch.Tensor  # int64 ids
    valid: torch.Tensor
    test: None = None  # no test split (nanoGPT's convention): the attribute says so to code that asks


def split(text: str) -> CharCorpus:
    """Ids of the train / validation parts of `text` under its sorted character vocabulary."""
    vocab = sorted(set(text))
    index = {c: i for i, c in enumerate(vocab)}
    ids = torch.tensor([index[c] for c in text], dtype=torch.long)
    cut = int(len(text) * TRAIN_FRACTION)
    return CharCorpus(vocab, ids[:cut], ids[cut:])


def load() -> CharCorpus:
    """The official file (mirror, cache or download; sha256-checked), split as nanoGPT splits it."""
    text = fetch(SPEC)["input.txt"].read_text(encoding="ascii")
    corpus = split(text)
    got = {"chars": len(text), "vocab": len(corpus.vocab), "train": corpus.train.numel(), "valid": corpus.valid.numel()}
    if got != EXPECTED:  # a verified file cannot get here; a changed split rule would
        raise DataError(f"tinyshakespeare: {got}, expected {EXPECTED}")
    return corpus
