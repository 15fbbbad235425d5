"""`make test` on a fresh clone finds the data mirror beside it, so no real-data test skips silently."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import MIRROR

ROOT = Path(__file__).resolve().parents[1]
SHOW = 'show-mirror: ; @echo "[$$REPLICATIONS_MIRROR]"'  # what a recipe, hence pytest, sees


def _env_without_mirror(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "REPLICATIONS_MIRROR"}
    return {**env, **extra}


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_exports_the_mirror_beside_the_checkout_when_none_is_set():
    out = subprocess.run(["make", "-s", f"--eval={SHOW}", "show-mirror"], cwd=ROOT, env=_env_without_mirror(),
                         capture_output=True, text=True, timeout=60, check=True)
    shown = out.stdout.strip()[1:-1]
    # make's abspath keeps a symlinked ../shared as it is: compare both sides resolved (a clone whose ../shared
    # is a symlink is a layout CI must pass from).
    assert (Path(shown).resolve() == MIRROR.resolve()) if MIRROR.is_dir() else shown == ""
    given = subprocess.run(["make", "-s", f"--eval={SHOW}", "show-mirror"], cwd=ROOT,
                           env=_env_without_mirror(REPLICATIONS_MIRROR="/elsewhere"),
                           capture_output=True, text=True, timeout=60, check=True)
    assert given.stdout.strip() == "[/elsewhere]"  # an explicit mirror wins


def test_an_empty_variable_does_not_hide_the_mirror_from_the_tests():
    code = "import os, tests.conftest; print(os.environ.get('REPLICATIONS_MIRROR', ''))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env_without_mirror(REPLICATIONS_MIRROR=""),
                         capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == (str(MIRROR) if MIRROR.exists() else "")


def test_a_bare_replicate_target_asks_for_a_paper_by_name():
    out = subprocess.run(["make", "-s", "replicate-"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "name a paper: make replicate-<paper>; valid: " in out.stderr
    assert "'.o'" not in out.stderr and "pshgcn" in out.stderr
