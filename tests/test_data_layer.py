"""The data layer: verified fetches from a mirror or a URL, clear refusals, and a mirror never written."""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

import pytest

from shared.cache_marker import MARKER
from shared.data import DataError, DatasetSpec, Packed, RemoteFile, fetch
from shared.data.fetch import extract_zip

PAYLOAD = b"node\tdata\n" * 100


def _spec(url: str, payload: bytes = PAYLOAD, size: int | None = None) -> DatasetSpec:
    digest = hashlib.sha256(payload).hexdigest()
    return DatasetSpec("toy", "Toy", (RemoteFile("toy.dat", url, digest, len(payload) if size is None else size),))


def _snapshot(folder: Path) -> dict[str, tuple[int, float]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime) for p in folder.rglob("*")}


def test_mirror_file_is_used_in_place_and_never_written(tmp_path, fresh_cache, monkeypatch):
    mirror = tmp_path / "mirror"
    (mirror / "Toy").mkdir(parents=True)
    (mirror / "Toy" / "toy.dat").write_bytes(PAYLOAD)
    monkeypatch.setenv("REPLICATIONS_MIRROR", str(mirror))
    before = _snapshot(mirror)
    paths = fetch(_spec("file:///nonexistent/toy.dat"))  # URL unusable: the mirror must be enough
    assert paths["toy.dat"] == mirror / "Toy" / "toy.dat"
    assert _snapshot(mirror) == before


def test_download_is_verified_and_cached(tmp_path, fresh_cache, monkeypatch):
    monkeypatch.delenv("REPLICATIONS_MIRROR", raising=False)
    source = tmp_path / "served.dat"
    source.write_bytes(PAYLOAD)
    path = fetch(_spec(source.as_uri()))["toy.dat"]
    assert path.read_bytes() == PAYLOAD and fresh_cache in path.parents
    source.unlink()  # second fetch must come from the cache
    assert fetch(_spec(source.as_uri()))["toy.dat"] == path


def test_checksum_mismatch_is_refused_and_nothing_is_kept(tmp_path, fresh_cache, monkeypatch):
    monkeypatch.delenv("REPLICATIONS_MIRROR", raising=False)
    source = tmp_path / "served.dat"
    source.write_bytes(PAYLOAD.replace(b"node", b"edge"))  # same size, other bytes
    spec = _spec(source.as_uri())
    with pytest.raises(DataError) as err:
        fetch(spec)
    message = str(err.value)
    assert "checksum mismatch" in message and spec.files[0].sha256 in message
    assert hashlib.sha256(source.read_bytes()).hexdigest() in message
    # 0-byte flocks stay, and the cache's own marker (shared.cache_marker)
    left = [p for p in fresh_cache.rglob("*") if p.is_file() and not p.name.endswith(".lock") and p.name != MARKER]
    assert not left, "a refused download must leave no file"


def test_truncated_mirror_file_is_refused(tmp_path, fresh_cache, monkeypatch):
    mirror = tmp_path / "mirror"
    (mirror / "Toy").mkdir(parents=True)
    (mirror / "Toy" / "toy.dat").write_bytes(PAYLOAD[:-7])
    monkeypatch.setenv("REPLICATIONS_MIRROR", str(mirror))
    with pytest.raises(DataError, match="truncated"):
        fetch(_spec("file:///nonexistent/toy.dat"))


def test_missing_everywhere_names_file_url_and_fix(tmp_path, fresh_cache, monkeypatch):
    monkeypatch.setenv("REPLICATIONS_MIRROR", str(tmp_path / "empty-mirror"))
    with pytest.raises(DataError) as err:
        fetch(_spec("file:///nonexistent/toy.dat"))
    message = str(err.value)
    assert "toy.dat" in message and "file:///nonexistent/toy.dat" in message and "Fix:" in message


def test_corrupt_zip_is_refused(tmp_path, fresh_cache):
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(DataError, match="not a valid zip"):
        extract_zip(bad, "0" * 64)
    assert not (fresh_cache / "extracted" / ("0" * 16)).exists()


def test_zip_extracts_into_cache_once(tmp_path, fresh_cache):
    archive = tmp_path / "a.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("A/node.dat", "0\tx\t0\n")
    out = extract_zip(archive, "ab" * 32)
    assert (out / "A" / "node.dat").read_text() == "0\tx\t0\n"
    stamp = os.stat(out).st_mtime
    assert extract_zip(archive, "ab" * 32) == out and os.stat(out).st_mtime == stamp


def _zipped(tmp_path: Path, members: dict[str, bytes]) -> tuple[Path, str]:
    archive = tmp_path / "served.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)
    return archive, hashlib.sha256(archive.read_bytes()).hexdigest()


def _packed_spec(archive: Path, archive_sha: str, files: dict[str, bytes]) -> DatasetSpec:
    return DatasetSpec("toy", "Toy", tuple(
        RemoteFile(name, archive.as_uri(), hashlib.sha256(payload).hexdigest(), len(payload),
                   Packed(archive_sha, f"toy/{name}"))
        for name, payload in files.items()))


def test_file_inside_an_archive_is_downloaded_once_and_extracted_verified(tmp_path, fresh_cache, monkeypatch):
    monkeypatch.delenv("REPLICATIONS_MIRROR", raising=False)
    files = {"a.tokens": PAYLOAD, "b.tokens": PAYLOAD[::-1]}
    archive, digest = _zipped(tmp_path, {f"toy/{k}": v for k, v in files.items()})
    paths = fetch(_packed_spec(archive, digest, files))
    assert {k: p.read_bytes() for k, p in paths.items()} == files
    archive.unlink()  # the archive is cached: a lost member is re-extracted without the network
    paths["b.tokens"].unlink()
    assert fetch(_packed_spec(archive, digest, files))["b.tokens"].read_bytes() == files["b.tokens"]


def test_archive_and_member_checksums_are_both_enforced(tmp_path, fresh_cache, monkeypatch):
    monkeypatch.delenv("REPLICATIONS_MIRROR", raising=False)
    archive, digest = _zipped(tmp_path, {"toy/a.tokens": PAYLOAD})
    with pytest.raises(DataError, match="checksum mismatch"):
        fetch(_packed_spec(archive, "0" * 64, {"a.tokens": PAYLOAD}))  # wrong archive
    with pytest.raises(DataError, match="checksum mismatch"):
        fetch(_packed_spec(archive, digest, {"a.tokens": PAYLOAD.upper()}))  # right archive, other member bytes
    with pytest.raises(DataError, match="cannot extract toy/b.tokens"):
        fetch(_packed_spec(archive, digest, {"b.tokens": PAYLOAD}))  # no such member
    assert not list((fresh_cache / "downloads" / "Toy").glob("*.tokens")), "a refused member must leave no file"


def test_mirror_holds_the_member_itself(tmp_path, fresh_cache, monkeypatch):
    mirror = tmp_path / "mirror"
    (mirror / "Toy").mkdir(parents=True)
    (mirror / "Toy" / "a.tokens").write_bytes(PAYLOAD)
    monkeypatch.setenv("REPLICATIONS_MIRROR", str(mirror))
    spec = _packed_spec(tmp_path / "absent.zip", "0" * 64, {"a.tokens": PAYLOAD})
    assert fetch(spec)["a.tokens"] == mirror / "Toy" / "a.tokens"
