"""The golden-value check itself: equal values pass, a moved value fails, UPDATE_GOLDEN stores."""

from __future__ import annotations

import json

import pytest

from tests.golden import check_golden


def test_golden_passes_equal_and_fails_moved(tmp_path, monkeypatch):
    monkeypatch.delenv("UPDATE_GOLDEN", raising=False)
    (tmp_path / "toy.json").write_text(json.dumps({"d/m": {"test_f1": 50.0, "test_acc": 0.9}}))
    check_golden("toy", "d/m", {"test_f1": 50.000001, "test_acc": 0.9}, folder=tmp_path)
    with pytest.raises(AssertionError, match="moved"):
        check_golden("toy", "d/m", {"test_f1": 50.1, "test_acc": 0.9}, folder=tmp_path)
    with pytest.raises(AssertionError, match="metrics"):
        check_golden("toy", "d/m", {"test_f1": 50.0}, folder=tmp_path)
    with pytest.raises(AssertionError, match="UPDATE_GOLDEN"):
        check_golden("toy", "d/other", {"test_f1": 50.0}, folder=tmp_path)


def test_update_golden_stores_values(tmp_path, monkeypatch):
    monkeypatch.setenv("UPDATE_GOLDEN", "1")
    check_golden("toy", "d/m", {"test_f1": 1.5}, folder=tmp_path)
    assert json.loads((tmp_path / "toy.json").read_text()) == {"d/m": {"test_f1": 1.5}}


def test_nan_matches_only_nan(tmp_path, monkeypatch):
    """A metric that is NaN by definition (PP-OCRv3's CER with no match) stays NaN; a number turning NaN fails."""
    monkeypatch.delenv("UPDATE_GOLDEN", raising=False)
    (tmp_path / "toy.json").write_text('{"d/m": {"test_cer": NaN, "test_f1": 1.0}}')
    check_golden("toy", "d/m", {"test_cer": float("nan"), "test_f1": 1.0}, folder=tmp_path)
    with pytest.raises(AssertionError, match="moved"):
        check_golden("toy", "d/m", {"test_cer": 0.5, "test_f1": 1.0}, folder=tmp_path)
    with pytest.raises(AssertionError, match="moved"):
        check_golden("toy", "d/m", {"test_cer": float("nan"), "test_f1": float("nan")}, folder=tmp_path)
