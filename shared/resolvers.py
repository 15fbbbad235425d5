"""The config's own arithmetic, registered once for every entry point (shared/__init__.py imports this module).

``${times:4,${paper.protocol.d_model}}``: a width stated as a multiple of another value, so a model file keeps its
ratio (an FFN 4 x d_model wide) when a protocol changes d_model (the MoE papers' scale ladder,
conf/dataset/tinyshakespeare_<layers>x<d>.yaml). Integers stay integers: the result is a layer width.

``${multirun_only:${hydra.mode},.hydra}`` (conf/config.yaml's hydra.output_subdir): the value for a --multirun job,
None for a single run. Registered here, not in the app's module, because a joblib worker or a submitit job resolves
its own config in a process that never imported replications/__main__.py (shared.compose).
"""

from __future__ import annotations

from typing import Any

from hydra.types import RunMode
from omegaconf import OmegaConf


def times(factor: float, value: float) -> int | float:
    product = factor * value
    return int(product) if float(product).is_integer() else product


if not OmegaConf.has_resolver("times"):
    OmegaConf.register_new_resolver("times", times)


def multirun_only(mode: RunMode | None, value: Any) -> Any:
    return value if mode == RunMode.MULTIRUN else None


if not OmegaConf.has_resolver("multirun_only"):
    OmegaConf.register_new_resolver("multirun_only", multirun_only)
