"""WikiText-2 (v1, tokenized; official files from the mirror, sha256-verified) as id streams.

Each line's whitespace tokens plus one <eos> (the word_language_model convention; gives the published
2,088,628 / 217,646 / 245,569 tokens). Vocabulary: the 33,278 train types ordered by train frequency
(most frequent first, ties by first occurrence), which the adaptive softmax's cutoffs rely on.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import torch

from shared.data import DataError
from shared.data.fetch import DatasetSpec, Packed, RemoteFile, fetch

# The official distribution is this zip; the mirror holds its three members as loose files (PROVENANCE.md).
ZIP = "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-v1.zip"
ZIP_SHA256 = "92675f1d63015c1c8b51f1656a52d5bdbc33aafa60cc47a218a66e7ee817488c"  # published by MLDatasets.jl and other loaders


def _member(name: str, sha256: str, size: int) -> RemoteFile:
    return RemoteFile(name, ZIP, sha256, size, Packed(ZIP_SHA256, f"wikitext-2/{name}"))


SPEC = DatasetSpec(
    name="wikitext2",
    folder="wikitext-2",
    files=(
        _member("wiki.train.tokens", "9e9fa1ad55b1c2c95b08e37dd8e653f638fac2c6de904b79e813611eefbc985f", 10797148),
        _member("wiki.valid.tokens", "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8", 1121681),
        _member("wiki.test.tokens", "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0", 1256449),
    ),
    note="a mirror holds the three wiki.*.tokens files of wikitext-2-v1.zip, extracted, in <mirror>/wikitext-2/.",
)
EXPECTED_TOKENS = {"train": 2088628, "valid": 217646, "test": 245569}


@dataclass
class Corpus:
    vocab: list[str]
    train: torch.Tensor
    valid: torch.Tensor
    test: torch.Tensor


def words(text: str) -> list[str]:
    out: list[str] = []
    for line in text.splitlines():
        out.extend(line.split())
        out.append("<eos>")
    return out


def load() -> Corpus:
    paths = fetch(SPEC)
    splits = {s: words(paths[f"wiki.{s}.tokens"].read_text(encoding="utf-8")) for s in ("train", "valid", "test")}
    for split, toks in splits.items():
        if len(toks) != EXPECTED_TOKENS[split]:
            raise DataError(f"wikitext-2 {split}: {len(toks)} tokens, expected {EXPECTED_TOKENS[split]}")
    counts = Counter(splits["train"])
    vocab = sorted(counts, key=lambda w: -counts[w])  # stable: ties keep first-occurrence order
    index = {w: i for i, w in enumerate(vocab)}
    try:
        ids = {s: torch.tensor([index[w] for w in toks], dtype=torch.long) for s, toks in splits.items()}
    except KeyError as exc:
        raise DataError(f"wikitext-2: token {exc} of valid/test is not in the train vocabulary") from exc
    return Corpus(vocab, ids["train"], ids["valid"], ids["test"])


def load_for(dataset: str, paper: str) -> Corpus:
    """`load()` for a paper whose protocol runs on WikiText-2 only: any other dataset name is a clear error."""
    if dataset != "wikitext2":
        raise ValueError(f"{paper} has no loader for dataset '{dataset}'; valid: wikitext2")
    return load()
