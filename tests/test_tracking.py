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


# --- one naming scheme (train/ val/ test/ reported/), applied in the tracker whatever a paper calls a number ---

@pytest.mark.parametrize("raw, final, name", [
    ("train_loss", False, "train/loss"), ("loss", False, "train/loss"), ("train/loss", False, "train/loss"),
    ("val_auc", False, "val/auc"), ("valid_ppl_subset", False, "val/ppl_subset"), ("val/map", False, "val/map"),
    ("valid/ppl", False, "val/ppl"), ("test_f1", False, "test/f1"), ("aux", False, "train/aux"),
    ("val_auc", True, "val/auc"), ("test_auc", True, "test/auc"), ("valid_ppl", True, "val/ppl"),
    ("train_tokens_per_s", True, "train/tokens_per_s"), ("latency_ms_median", True, "test/latency_ms_median"),
    ("first_loss", True, "train/first_loss"), ("a2a_ms_r100_4KiB", True, "test/a2a_ms_r100_4KiB"),
])
def test_metric_names_follow_the_scheme(raw, final, name):
    assert tracking.metric_name(raw, final) == name


def test_reported_mirrors_the_reproduced_name_and_collisions_stay_apart():
    assert tracking.reported_name("test_auc") == "reported/test/auc"
    assert tracking.reported_name("valid_ppl") == "reported/val/ppl"
    names = tracking.Names()
    out = names.rename({"train_tokens_per_s": 1.0, "tokens_per_s": 2.0, "train_loss": 3.0, "loss": 4.0})
    assert len(out) == 4 and out["train/tokens_per_s"] == 1.0 and out["train/loss"] == 3.0
    assert names("tokens_per_s") == "train/raw_tokens_per_s"  # stable for the rest of the run


def test_tags_and_the_protocol_summary():
    cfg = OmegaConf.merge(_cfg(), {"scale": {"name": "smoke"}})
    tags = tracking.run_tags(cfg, {"git_commit": "0123456789abcdef", "git_dirty": True})
    assert tags == ["paper:gaga", "dataset:tolokers", "model:gaga", "scale:smoke", "commit:0123456", "dirty"]
    record = {"aggregate": {"test_auc": {"mean": 80.0, "std": 1.0, "n": 3}, "val_auc": {"mean": 79.0, "std": 2.0, "n": 3}},
              "comparison": [{"metric": "test_auc", "status": "reproduced", "reference_kind": "secondary",
                              "difference": -2.4, "reported": 82.4},
                             {"metric": "val_auc", "status": "no reference", "reference_kind": None,
                              "difference": None, "reported": None}]}
    summary = tracking.protocol_summary(record)
    assert summary == {"test/auc/mean": 80.0, "test/auc/std": 1.0, "test/auc/n": 3, "val/auc/mean": 79.0,
                       "val/auc/std": 2.0, "val/auc/n": 3, "test/auc/status": "reproduced",
                       "test/auc/reference_kind": "secondary", "test/auc/difference": -2.4,
                       "reported/test/auc": 82.4, "val/auc/status": "no reference"}
    assert all(tracking.SCHEME.match(k) for k in summary)


def test_gaga_logs_validation_auc_in_percent_as_it_reports_it():
    """GAGA's per-epoch val_auc was a fraction while evaluate()'s val_auc/test_auc are percent."""
    import torch

    from replications.gaga.train import fit

    torch.manual_seed(0)
    n = 64
    x = torch.randn(n, 4)
    y = (x[:, 0] > 0).long()
    model = torch.nn.Linear(4, 2)
    seen = []
    fit(lambda idx: model(x[idx]), model, y, torch.arange(0, 40), torch.arange(40, n),
        torch.optim.Adam(model.parameters(), lr=0.05), max_steps=3, patience_steps=3, batch_size=None,
        log=lambda m, s: seen.append(m))
    assert seen and all(1.0 < m["val_auc"] <= 100.0 for m in seen)  # percent (a chance AUC is 50, not 0.5)
