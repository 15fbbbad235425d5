"""Per-paper shrinking for ``scale=smoke``: tiny widths, orders and budgets, on the real data and code paths.

conf/scale/smoke.yaml is shared by every paper; what makes one paper's smoke run take seconds lives in its
own conf/paper/<paper>.yaml as a ``smoke:`` block of dotted keys, e.g. ``model.K: 2`` or
``scale.max_epochs: 3``. A key applies to the models that have it (PSHGCN's ``model.K`` leaves RGCN alone);
a key the user set on the command line wins over the block. ``python -m replications`` applies it as the
config is composed, in every job's process too, so ``--cfg job`` prints the config that runs (shared/compose.py);
``python -m replications.replicate`` and tests call ``apply_smoke`` after composing (applying it twice is harmless).
"""

from __future__ import annotations

from collections.abc import Iterable

from omegaconf import DictConfig, OmegaConf, open_dict


def override_keys(overrides: Iterable[str]) -> set[str]:
    """The dotted keys a list of Hydra overrides sets (``+model.x=1`` -> ``model.x``)."""
    return {o.split("=", 1)[0].lstrip("+~") for o in overrides if "=" in o}


def apply_smoke(cfg: DictConfig, explicit: Iterable[str] = ()) -> list[str]:
    """Apply the paper's ``smoke:`` block when scale=smoke; returns the keys it changed."""
    block = cfg.paper.get("smoke")
    if cfg.scale.name != "smoke" or not block:
        return []
    chosen = override_keys(explicit)
    changed = []
    for key, value in block.items():
        if key in chosen:
            continue  # the command line wins: `scale=smoke scale.max_epochs=10` runs 10 epochs
        parent, _, leaf = key.rpartition(".")
        node = OmegaConf.select(cfg, parent) if parent else cfg
        if not isinstance(node, DictConfig) or leaf not in node:
            continue  # this model has no such key (e.g. RGCN has no polynomial order K)
        with open_dict(cfg):
            OmegaConf.update(cfg, key, value, merge=False)
        changed.append(key)
    return changed
