"""shared.tracking: W&B refused up front when it would fail (tests/test_bad_input.py has the entry-point cases);
never contacts W&B (wandb.init is replaced where a test reaches it)."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from shared import config_check, tracking
from shared.config_check import ConfigError

KEY = "0123456789abcdef0123456789abcdef01234567"  # the form of a W&B key, not a key


def _cfg(mode=None, name="wandb"):
    return OmegaConf.create({"tracker": {"name": name, "project": "p", "entity": None, "mode": mode},
                             "paper": {"name": "gaga"}, "dataset": {"name": "tolokers"}, "model": {"name": "gaga"}})


@pytest.fixture(autouse=True)
def clean_env(tmp_path, monkeypatch):
    for name in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "netrc"))  # no `wandb login` unless a test writes one


def test_offline_is_the_default_and_needs_nothing():
    config_check.check_tracker(_cfg())
    assert config_check.wandb_mode(None)[0] == "offline"


def test_a_key_makes_it_online_and_a_well_formed_key_passes(monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", KEY)
    config_check.check_tracker(_cfg())
    assert config_check.wandb_mode(None)[0] == "online"
    for key in (KEY, f"local-{KEY}", "aaa.bbb.ccc"):  # plain, on-prem prefix, JWT (wandb's own rule)
        assert config_check.key_problem(key) is None


def test_online_with_a_wandb_login_passes(tmp_path, monkeypatch):
    (tmp_path / "netrc").write_text(f"machine api.wandb.ai\n  login user\n  password {KEY}\n")
    config_check.check_tracker(_cfg(mode="online"))
    with pytest.raises(ConfigError, match="tracker.mode=online needs a W&B API key"):
        monkeypatch.setenv("WANDB_BASE_URL", "https://wandb.example.org")  # a login for another host
        config_check.check_tracker(_cfg(mode="online"))


def test_unknown_tracker_is_a_config_error():
    with pytest.raises(ConfigError, match="tracker=mlflow is not a tracker; valid: none, wandb"):
        tracking.make_tracker(_cfg(name="mlflow"))


def test_an_online_start_that_cannot_reach_wandb_fails_fast_in_one_line(monkeypatch):
    import wandb

    seen = {}

    def init(**kwargs):
        seen.update(kwargs)
        raise wandb.errors.CommError("Run initialization has timed out after 20.0 sec.\nPlease try again")

    monkeypatch.setattr(wandb, "init", init)
    monkeypatch.setenv("WANDB_API_KEY", KEY)
    tracker = tracking.make_tracker(_cfg())
    with pytest.raises(ConfigError) as info:
        tracker.start(_cfg(), seed=1)
    assert seen["settings"].init_timeout == tracking.INIT_TIMEOUT <= 30 and seen["mode"] == "online"
    message = str(info.value)
    assert "\n" not in message and "timed out after 20.0 sec." in message and "online needs network" in message
