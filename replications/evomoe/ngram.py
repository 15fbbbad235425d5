"""EvoMoE's bigram floor: the count-based Kneser-Ney bigram now lives in replications/moe/ngram.py (TA-MoE's
character-level claims need the same floor, and a paper package never imports another's); this module keeps
EvoMoE's import path."""

from __future__ import annotations

from replications.moe.ngram import kneser_ney_bigram_ppl

__all__ = ["kneser_ney_bigram_ppl"]
