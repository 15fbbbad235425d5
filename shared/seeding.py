"""Seed every RNG the suite touches, and ask torch for deterministic kernels."""

from __future__ import annotations

import os
import random

import numpy as np
import torch


def seed_everything(seed: int) -> None:
    os.environ["PYTHONHASHSEED"] = str(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    # warn_only: a few sparse CUDA kernels have no deterministic variant; on CPU all of ours do.
    torch.use_deterministic_algorithms(True, warn_only=True)
