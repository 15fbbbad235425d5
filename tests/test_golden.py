"""The golden-value check itself: equal values pass, a moved value fails, UPDATE_GOLDEN stores, and the values are
kept per CPU kind (a kind without its own set is held to the others at the stated cross-kind tolerance)."""

from __future__ import annotations

import json
import math

import pytest

from tests.golden import CROSS_KIND_RTOL, GOLDEN_DIR, MADE_ON, check_golden, this_kind

AMX, BF16 = "avx512_core_amx", "avx512_core_bf16"


def _store(folder, kind, data):
    (folder / kind).mkdir(parents=True, exist_ok=True)
    (folder / kind / "toy.json").write_text(json.dumps({MADE_ON: {"onednn_isa": kind}, **data}))


def test_golden_passes_equal_and_fails_moved(tmp_path, monkeypatch):
    monkeypatch.delenv("UPDATE_GOLDEN", raising=False)
    _store(tmp_path, AMX, {"d/m": {"test_f1": 50.0, "test_acc": 0.9}})
    check_golden("toy", "d/m", {"test_f1": 50.000001, "test_acc": 0.9}, folder=tmp_path, kind=AMX)
    with pytest.raises(AssertionError, match=f"moved on CPU kind {AMX} against the golden values of this kind"):
        check_golden("toy", "d/m", {"test_f1": 50.1, "test_acc": 0.9}, folder=tmp_path, kind=AMX)
    with pytest.raises(AssertionError, match="metrics"):
        check_golden("toy", "d/m", {"test_f1": 50.0}, folder=tmp_path, kind=AMX)
    with pytest.raises(AssertionError, match="UPDATE_GOLDEN"):
        check_golden("toy", "d/other", {"test_f1": 50.0}, folder=tmp_path, kind=AMX)


def test_a_kind_without_its_own_set_is_held_to_the_others_at_the_cross_kind_tolerance(tmp_path, monkeypatch):
    """AVX2 has no set: 0.5 % off the AMX value passes (within the measured kind-to-kind spread), 5 % fails naming both."""
    monkeypatch.delenv("UPDATE_GOLDEN", raising=False)
    _store(tmp_path, AMX, {"d/m": {"loss": 3.2811}})
    check_golden("toy", "d/m", {"loss": 3.2811 * 1.005}, folder=tmp_path, kind="avx2")
    with pytest.raises(AssertionError, match=f"CPU kind avx2 against the golden values of {AMX} at rtol 0.03"):
        check_golden("toy", "d/m", {"loss": 3.2811 * 1.05}, folder=tmp_path, kind="avx2")


def test_a_kind_with_its_own_set_is_held_to_it_exactly(tmp_path, monkeypatch):
    """The AMD set, not the Intel one, judges an AMD run: 0.5 % off its own value fails there (it is exact on itself)."""
    monkeypatch.delenv("UPDATE_GOLDEN", raising=False)
    _store(tmp_path, AMX, {"d/m": {"loss": 3.2811}})
    _store(tmp_path, BF16, {"d/m": {"loss": 3.2972}})
    check_golden("toy", "d/m", {"loss": 3.2972}, folder=tmp_path, kind=BF16)
    with pytest.raises(AssertionError, match=f"moved on CPU kind {BF16}"):
        check_golden("toy", "d/m", {"loss": 3.2811}, folder=tmp_path, kind=BF16)


def test_update_golden_stores_values_under_this_kind_with_the_machine(tmp_path, monkeypatch):
    monkeypatch.setenv("UPDATE_GOLDEN", "1")
    check_golden("toy", "d/m", {"test_f1": 1.5}, folder=tmp_path, kind=BF16)
    saved = json.loads((tmp_path / BF16 / "toy.json").read_text())
    assert saved["d/m"] == {"test_f1": 1.5} and saved[MADE_ON]["onednn_isa"] == BF16 and saved[MADE_ON]["cpu"]
    assert not (tmp_path / AMX).exists()


def test_nan_matches_only_nan(tmp_path, monkeypatch):
    """A metric that is NaN by definition (PP-OCRv3's CER with no match) stays NaN; a number turning NaN fails."""
    monkeypatch.delenv("UPDATE_GOLDEN", raising=False)
    (tmp_path / AMX).mkdir()
    (tmp_path / AMX / "toy.json").write_text('{"d/m": {"test_cer": NaN, "test_f1": 1.0}}')
    check_golden("toy", "d/m", {"test_cer": float("nan"), "test_f1": 1.0}, folder=tmp_path, kind=AMX)
    with pytest.raises(AssertionError, match="moved"):
        check_golden("toy", "d/m", {"test_cer": 0.5, "test_f1": 1.0}, folder=tmp_path, kind=AMX)
    with pytest.raises(AssertionError, match="moved"):
        check_golden("toy", "d/m", {"test_cer": float("nan"), "test_f1": float("nan")}, folder=tmp_path, kind=AMX)


def test_every_golden_file_names_the_kind_that_made_it():
    files = sorted(GOLDEN_DIR.glob("*/*.json"))
    assert files and not list(GOLDEN_DIR.glob("*.json")), "golden files live under tests/golden/<onednn isa>/"
    for path in files:
        assert json.loads(path.read_text())[MADE_ON]["onednn_isa"] == path.parent.name, path


def test_this_kind_is_an_isa_name():
    assert this_kind() in {"avx512_core_amx_fp16", AMX, "avx512_core_fp16", BF16, "avx512_core_vnni", "avx512_core",
                           "avx2_vnni", "avx2", "below_avx2", "unknown"}


def test_cross_kind_tolerance_covers_the_measured_spread():
    """CROSS_KIND_RTOL's reason: the stored kinds differ by less than half of it on every shared golden value (a
    third kind then gets a margin). Fails if a change makes the kinds drift apart, and says by how much."""
    sets = {p: json.loads(p.read_text()) for p in GOLDEN_DIR.glob("*/*.json")}
    spread: dict[str, float] = {}
    for path, data in sets.items():
        for other_path, other in sets.items():
            if other_path.name != path.name or other_path == path:
                continue
            for key, values in data.items():
                if key == MADE_ON or key not in other:
                    continue
                for metric, value in values.items():
                    b = other[key][metric]
                    if math.isnan(value) or math.isnan(b) or value == b:
                        continue
                    spread[f"{path.stem} {key} {metric}"] = abs(value - b) / max(abs(value), abs(b))
    worst = max(spread.items(), key=lambda kv: kv[1], default=("none", 0.0))
    assert worst[1] < CROSS_KIND_RTOL / 2, f"golden kinds differ by {worst[1]:.2e} on {worst[0]}"
