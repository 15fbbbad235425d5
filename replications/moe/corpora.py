"""The MoE papers' LM corpora by dataset name: WikiText-2 (word level, replications/moe/wikitext.py) and Tiny
Shakespeare (character level, shared/data/tinyshakespeare.py). Each has ``vocab``, ``train``, ``valid`` and
``test`` (None for Tiny Shakespeare: nanoGPT's split has no test part, its validation part is what is reported).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from replications.moe import wikitext
from shared.data import tinyshakespeare

LOADERS: dict[str, Callable[[], Any]] = {"wikitext2": wikitext.load, "tinyshakespeare": tinyshakespeare.load}
# The suffix of a claim judged on Tiny Shakespeare (EvoMoE, TA-MoE, FlexMoE: one verdict line per dataset on the
# first screen, so short; the section and the scale words say "character level"). WikiText-2's texts have none.
CHAR_CLAIM_SUFFIX = " (Tiny Shakespeare)"


def corpus_of(dataset: Mapping[str, Any]) -> str:
    """The corpus a dataset config (or a record's ``config.dataset``) trains on: its ``corpus`` key where it has
    one (a rung of the Tiny Shakespeare scale ladder, conf/dataset/tinyshakespeare_<layers>x<d>.yaml), else its name."""
    return str(dataset.get("corpus") or dataset["name"])


def record_corpus(record: Mapping[str, Any]) -> str:
    """The corpus a result record was trained on (its config's dataset; a record without one: its dataset name)."""
    return corpus_of(record.get("config", {}).get("dataset") or {"name": record["dataset"]})


def load_for(dataset: Mapping[str, Any], paper: str, supported: Sequence[str]) -> Any:
    """The corpus of the `dataset` config for a paper whose protocol runs on `supported`: any other is a clear error."""
    name, corpus = str(dataset["name"]), corpus_of(dataset)
    if name not in supported or corpus not in LOADERS:
        raise ValueError(f"{paper} has no loader for dataset '{name}'; valid: {', '.join(supported)}")
    return LOADERS[corpus]()


def has_test(corpus: Any) -> bool:
    return getattr(corpus, "test", None) is not None
