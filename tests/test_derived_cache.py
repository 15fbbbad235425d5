"""Derived cache files (extracted members, processed tensors) are verified before use and rebuilt when corrupt."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import torch

from shared.data.derived import cached_file, intact, stamp, stamp_path
from shared.data.fetch import extract_zip


def _zip(tmp_path: Path) -> tuple[Path, str]:
    archive = tmp_path / "DS.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("DS/node.dat", "0\tnode\t0\t1.0,2.0\n" * 1000)
        zf.writestr("DS/link.dat", "0\t1\t0\t1.0\n")
    return archive, hashlib.sha256(archive.read_bytes()).hexdigest()


def test_truncated_extracted_member_is_extracted_again(fresh_cache, tmp_path, capsys):
    archive, sha = _zip(tmp_path)
    folder = extract_zip(archive, sha)
    node = folder / "DS" / "node.dat"
    whole = node.read_bytes()
    node.write_bytes(whole[: len(whole) // 2])  # half of node.dat, as once read without complaint
    assert not intact(folder)
    again = extract_zip(archive, sha)
    assert (again / "DS" / "node.dat").read_bytes() == whole and intact(again)
    assert "re-extracting" in capsys.readouterr().out


def test_extra_or_missing_member_is_noticed(fresh_cache, tmp_path):
    archive, sha = _zip(tmp_path)
    folder = extract_zip(archive, sha)
    (folder / "DS" / "stray.dat").write_text("x")
    assert not intact(folder)
    folder = extract_zip(archive, sha)
    (folder / "DS" / "link.dat").unlink()
    assert not intact(folder)


def test_corrupt_processed_tensor_file_is_rebuilt_not_a_miniz_traceback(tmp_path, capsys):
    path = tmp_path / "processed" / "data.pt"
    builds = []

    def build():
        builds.append(1)
        return {"x": torch.arange(1000)}

    load = lambda p: torch.load(p, weights_only=False)  # noqa: E731
    first = cached_file(path, build, torch.save, load)
    assert torch.equal(cached_file(path, build, torch.save, load)["x"], first["x"]) and len(builds) == 1
    path.write_bytes(path.read_bytes()[:100])  # truncated: torch.load would fail inside miniz
    assert torch.equal(cached_file(path, build, torch.save, load)["x"], first["x"]) and len(builds) == 2
    assert "rebuilding" in capsys.readouterr().out and intact(path)


def test_unstamped_or_garbled_stamp_counts_as_not_intact(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"abc")
    assert not intact(path)  # written before stamps, or interrupted between the file and its stamp
    stamp(path)
    assert intact(path)
    stamp_path(path).write_text("{not json")
    assert not intact(path)
    stamp(path)
    path.write_bytes(b"abd")  # same size, other content: the hash catches it
    assert not intact(path)
