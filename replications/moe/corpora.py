"""The MoE papers' LM corpora by dataset name: WikiText-2 (word level, replications/moe/wikitext.py) and Tiny
Shakespeare (character level, shared/data/tinyshakespeare.py). Each has ``vocab``, ``train``, ``valid`` and
``test`` (None for Tiny Shakespeare: nanoGPT's split has no test part, its validation part is what is reported).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from replications.moe import wikitext
from shared.data import tinyshakespeare

LOADERS: dict[str, Callable[[], Any]] = {"wikitext2": wikitext.load, "tinyshakespeare": tinyshakespeare.load}
# The suffix of a claim judged on Tiny Shakespeare (EvoMoE, TA-MoE, FlexMoE: one verdict line per dataset on the
# first screen, so short; the section and the scale words say "character level"). WikiText-2's texts have none.
CHAR_CLAIM_SUFFIX = " (Tiny Shakespeare)"


def load_for(dataset: str, paper: str, supported: Sequence[str]) -> Any:
    """The corpus of `dataset` for a paper whose protocol runs on `supported`: any other name is a clear error."""
    if dataset not in supported or dataset not in LOADERS:
        raise ValueError(f"{paper} has no loader for dataset '{dataset}'; valid: {', '.join(supported)}")
    return LOADERS[dataset]()


def has_test(corpus: Any) -> bool:
    return getattr(corpus, "test", None) is not None
