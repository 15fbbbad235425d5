"""The config's own arithmetic, registered once for every entry point (shared/__init__.py imports this module).

``${times:4,${paper.protocol.d_model}}``: a width stated as a multiple of another value, so a model file keeps its
ratio (an FFN 4 x d_model wide) when a protocol changes d_model (the MoE papers' scale ladder,
conf/dataset/tinyshakespeare_<layers>x<d>.yaml). Integers stay integers: the result is a layer width.

``${multirun_only:${hydra.mode},.hydra}`` (conf/config.yaml's hydra.output_subdir): the value for a --multirun job,
None for a single run. Registered here, not in the app's module, because a joblib worker or a submitit job resolves
its own config in a process that never imported replications/__main__.py (shared.compose).

``${array_name:...}`` (conf/hydra/launcher/slurm.yaml): a --multirun's SLURM job name, ``<paper>/<dataset>/<model>/s<seed>``.
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


def array_name(overrides: Any, params: Any, paper: str, dataset: str, model: str, seed: int | None) -> str:
    """``<paper>/<dataset>/<model>/s<seed>`` for all the jobs of one --multirun, which submitit submits as one SLURM
    job array under one name, resolved once in the sweep's master config, before the sweep expands: there a swept key
    still holds its default (seed: null, paper: pshgcn). So a key swept on the command line or in the sweep config's
    ``hydra.sweeper.params`` (the command line wins, as in Hydra) shows its sweep (``s0,1,2``, ``srange(1,6)``), a
    model left to its paper's default under a swept paper or dataset ``*``, the others their config value. Without a
    seed (each job runs the protocol's seeds) the name ends at the model."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    given = {str(k): str(v) for k, v in (params or {}).items()}
    given |= {o.split("=", 1)[0].lstrip("+~"): o.split("=", 1)[1] for o in overrides or () if "=" in o}
    parser = OverridesParser.create()
    swept = {k: v for k, v in given.items() if parser.parse_override(f"{k}={v}").is_sweep_override()}
    parts = [swept.get(key, str(value)) for key, value in (("paper", paper), ("dataset", dataset), ("model", model))]
    if "model" not in given and {"paper", "dataset"} & set(swept):
        parts[2] = "*"  # the model is ${paper}/${dataset} of each job, not the master config's
    if "seed" in swept or seed is not None:
        parts.append(f"s{swept.get('seed', seed)}")
    return "/".join(parts)


if not OmegaConf.has_resolver("array_name"):
    OmegaConf.register_new_resolver("array_name", array_name)
