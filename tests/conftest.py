"""Test environment: offline trackers and HF, a private cache, and the local data mirror when present."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

MIRROR = Path(__file__).resolve().parents[2] / "shared" / "data"
CONF = Path(__file__).resolve().parents[1] / "conf"

os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
if "REPLICATIONS_MIRROR" not in os.environ and MIRROR.exists():
    os.environ["REPLICATIONS_MIRROR"] = str(MIRROR)

needs_mirror = pytest.mark.skipif(
    not os.environ.get("REPLICATIONS_MIRROR"), reason="set REPLICATIONS_MIRROR to a data mirror (../shared/data)"
)


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch) -> Path:
    """An empty cache folder, so a test sees exactly what it fetched."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("REPLICATIONS_CACHE", str(cache))
    return cache


def compose_cfg(*overrides: str):
    """Compose the real Hydra config exactly as `python -m replications` would."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=list(overrides))


@pytest.fixture(scope="module")
def module_cache(tmp_path_factory) -> Path:
    """One cache per test module: real datasets are parsed once (DBLP's node.dat is 127 MB)."""
    mp = pytest.MonkeyPatch()
    cache = tmp_path_factory.mktemp("cache")
    mp.setenv("REPLICATIONS_CACHE", str(cache))
    yield cache
    mp.undo()
