"""The real command at scale=smoke: every model through the runner, then the paper's own pages."""

from __future__ import annotations

import json

import pytest

from replications import replicate


@pytest.mark.slow
def test_replicate_smoke_writes_results_and_pages(monkeypatch, tmp_path):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.chdir(tmp_path)  # the kept weights go under ./outputs
    code = replicate.main(["ppyoloe_r", "scale=smoke", "tracker=none", f"results_dir={tmp_path}"])
    assert code == 0
    out = tmp_path / "ppyoloe_r"
    for model in ("ppyoloe_r", "ppyoloe_r_smoothl1", "ppyoloe_r_direct_angle"):
        saved = json.loads((out / "synthetic_rotated" / f"{model}.json").read_text())
        assert saved["complete"] and 0.0 <= saved["aggregate"]["test_map"]["mean"] <= 100.0
    curve = json.loads((out / "synthetic_rotated" / "ppyoloe_r.json").read_text())["runs"][0]["train"]["curve"]
    assert [c["step"] for c in curve] == [1, 2]
    arch = (out / "ARCHITECTURE.md").read_text()
    assert "| ppyoloe_r_s |" in arch and "| yes |" in arch
    assert "ppyoloe_r_smoothl1" in (out / "ABLATION.md").read_text()


def test_unknown_dataset_is_refused():
    from omegaconf import OmegaConf

    from replications.ppyoloe_r import REPLICATION

    with pytest.raises(ValueError, match="valid: synthetic_rotated, dota_v1"):
        REPLICATION.load_data(OmegaConf.create({"dataset": {"name": "dior"}}))
