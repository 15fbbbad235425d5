"""Test environment: offline trackers and HF, a private cache, and the local data mirror when present."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

MIRROR = Path(__file__).resolve().parents[2] / "shared" / "data"
CONF = Path(__file__).resolve().parents[1] / "conf"

os.environ.setdefault("WANDB_MODE", "disabled")
# Under `make test` the suite inherits make's own variables: a `make` the tests start would then run as a sub-make
# (its error line reads 'make[1]: ***', command-line variables of the outer make leak in). Tests run make as a user does.
for _name in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES"):
    os.environ.pop(_name, None)
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Empty counts as unset: an exported empty variable must not hide the mirror beside the checkout.
if not os.environ.get("REPLICATIONS_MIRROR") and MIRROR.exists():
    os.environ["REPLICATIONS_MIRROR"] = str(MIRROR)

NO_MIRROR = f"no data mirror: REPLICATIONS_MIRROR is unset and {MIRROR} does not exist"
needs_mirror = pytest.mark.skipif(not os.environ.get("REPLICATIONS_MIRROR"), reason=NO_MIRROR)


def pytest_report_header(config) -> str:
    """Say up front which data the real-data tests read, or why they will skip."""
    mirror = os.environ.get("REPLICATIONS_MIRROR")
    return f"data mirror: {mirror}" if mirror else f"{NO_MIRROR}; the real-data tests skip"


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
