"""A count-based bigram language model (interpolated Kneser-Ney, discount 0.75) on the same token streams.

The floor any neural model of the comparison should clear: while every model's test perplexity is above
this bigram's, the models are still learning bigram statistics and their ordering says nothing about
gates at the paper's scale (the verdict is then "not testable at this scale").
Continuation counts are add-one smoothed so every vocabulary word has a probability.
Shared by the MoE papers (EvoMoE's word and character floors, TA-MoE's character floor): it lives here because a
paper package never imports another's.
"""

from __future__ import annotations

import math

import numpy as np
from torch import Tensor


def kneser_ney_bigram_ppl(train: Tensor, test: Tensor, vocab: int, discount: float = 0.75) -> float:
    """exp(mean NLL) of test[1:] given test[:-1] under a bigram fitted on train: one stream [n], or
    streams [B, n] (pairs taken inside each row, as the models read them)."""
    tr, te = np.atleast_2d(train.numpy().astype(np.int64)), test.numpy().astype(np.int64)
    codes = (tr[:, :-1] * vocab + tr[:, 1:]).reshape(-1)
    pairs, counts = np.unique(codes, return_counts=True)  # sorted pair codes
    hist = pairs // vocab
    c_hist = np.bincount(hist, weights=counts, minlength=vocab)  # c(a .)
    types_after = np.bincount(hist, minlength=vocab)  # N1+(a .)
    cont = np.bincount(pairs % vocab, minlength=vocab) + 1.0  # N1+(. b), add-one
    p_cont = cont / cont.sum()
    a, b = te[:-1], te[1:]
    code = a * vocab + b
    at = np.clip(np.searchsorted(pairs, code), 0, len(pairs) - 1)
    c_ab = np.where(pairs[at] == code, counts[at], 0)
    seen = c_hist[a] > 0
    denom = np.where(seen, c_hist[a], 1.0)
    p = np.where(seen, np.maximum(c_ab - discount, 0) / denom + discount * types_after[a] / denom * p_cont[b],
                 p_cont[b])
    return math.exp(-float(np.log(p).mean()))
