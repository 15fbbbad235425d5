"""Parallel runs on a cold cache (a joblib sweep, several runs started at once) share one verified copy.

Each test starts several processes (spawned, so nothing is shared but the cache folder) that wait on a
barrier and then extract, fetch or build the same entry at once: every one must succeed and get the same
path, the cache must hold one verified copy, and no temporary ``*.part`` file or folder may be left.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from shared.data import DatasetSpec, Packed, RemoteFile
from shared.data.derived import cached_file, intact
from shared.data.fetch import extract_zip, fetch

WRITERS = 4
MEMBERS = {f"DS/part{i:02d}.dat": (f"{i}\tnode\t{i % 7}\t1.0,2.0\n" * 20000).encode() for i in range(12)}


def _zip(path: Path) -> tuple[Path, str]:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:  # ~5 MB to extract: writers overlap
        for name, payload in MEMBERS.items():
            zf.writestr(name, payload)
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def _spec(archive: Path, archive_sha: str) -> DatasetSpec:
    member = "DS/part03.dat"
    packed = RemoteFile("part03.dat", archive.as_uri(), hashlib.sha256(MEMBERS[member]).hexdigest(),
                        len(MEMBERS[member]), Packed(archive_sha, member))
    plain = RemoteFile(archive.name, archive.as_uri(), archive_sha, archive.stat().st_size)
    return DatasetSpec("toy", "Toy", (packed, plain))


def _extract(cache: str, archive: str, sha: str, barrier) -> str:
    os.environ["REPLICATIONS_CACHE"] = cache
    barrier.wait()
    return str(extract_zip(Path(archive), sha))


def _fetch(cache: str, archive: str, sha: str, barrier) -> dict[str, str]:
    os.environ["REPLICATIONS_CACHE"] = cache
    os.environ.pop("REPLICATIONS_MIRROR", None)
    barrier.wait()
    return {k: str(v) for k, v in fetch(_spec(Path(archive), sha)).items()}


def _build_counted(log: str) -> dict:
    with open(log, "a") as f:  # one line per build: the test counts them
        f.write("built\n")
    return {"rows": list(range(50000))}


def _derive(target: str, log: str, barrier) -> int:
    barrier.wait()
    value = cached_file(Path(target), lambda: _build_counted(log),
                        lambda v, p: p.write_text(json.dumps(v)), lambda p: json.loads(p.read_text()))
    return len(value["rows"])


def _worker(job, args, barrier, results):
    try:
        results.put(("ok", job(*args, barrier)))
    except BaseException as exc:  # reported to the test, not lost in a child's stderr
        results.put(("error", f"{type(exc).__name__}: {exc}"))


def _all_at_once(job, *args) -> list:
    """Run job(*args, barrier) in WRITERS spawned processes released together; return their results."""
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(WRITERS), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(job, args, barrier, results)) for _ in range(WRITERS)]
    for p in procs:
        p.start()
    out = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    errors = [value for status, value in out if status == "error"]
    assert not errors, errors
    return [value for _, value in out]


def _leftovers(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.endswith(".part")]


def _check_extracted(cache: Path, folder: Path) -> None:
    assert intact(folder)
    assert {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()} == MEMBERS
    entries = sorted(p.name for p in (cache / "extracted").iterdir() if not p.name.endswith(".lock"))
    assert entries == [folder.name, folder.name + ".stamp.json"]  # one copy, no stray folder
    assert not _leftovers(cache)


def test_parallel_processes_extract_one_verified_copy(tmp_path, fresh_cache):
    archive, sha = _zip(tmp_path / "DS.zip")
    folders = _all_at_once(_extract, str(fresh_cache), str(archive), sha)
    assert len(set(folders)) == 1
    _check_extracted(fresh_cache, Path(folders[0]))


def test_parallel_threads_extract_one_verified_copy(tmp_path, fresh_cache):
    archive, sha = _zip(tmp_path / "DS.zip")
    with ThreadPoolExecutor(WRITERS) as pool:
        folders = list(pool.map(lambda _: extract_zip(archive, sha), range(WRITERS)))
    assert len(set(folders)) == 1
    _check_extracted(fresh_cache, folders[0])


def test_a_corrupt_copy_is_replaced_once_under_contention(tmp_path, fresh_cache):
    archive, sha = _zip(tmp_path / "DS.zip")
    folder = extract_zip(archive, sha)
    (folder / "DS" / "part05.dat").write_bytes(b"half")  # not what was stamped: re-extracted, by one writer
    folders = _all_at_once(_extract, str(fresh_cache), str(archive), sha)
    assert folders == [str(folder)] * WRITERS
    _check_extracted(fresh_cache, folder)


def test_parallel_fetches_download_and_extract_once(tmp_path, fresh_cache):
    archive, sha = _zip(tmp_path / "served.zip")  # a local "official URL" (file://)
    results = _all_at_once(_fetch, str(fresh_cache), str(archive), sha)
    assert all(r == results[0] for r in results)
    paths = {k: Path(v) for k, v in results[0].items()}
    assert paths["part03.dat"].read_bytes() == MEMBERS["DS/part03.dat"]
    assert paths["served.zip"].read_bytes() == archive.read_bytes()
    downloads = fresh_cache / "downloads" / "Toy"
    assert sorted(p.name for p in downloads.iterdir() if not p.name.endswith(".lock")) == ["part03.dat", "served.zip"]
    assert not _leftovers(fresh_cache)


@pytest.mark.parametrize("corrupt", [False, True])
def test_parallel_builds_of_a_derived_file_build_once(tmp_path, corrupt):
    target, log = tmp_path / "processed" / "data.json", tmp_path / "builds.log"
    if corrupt:  # a half-written file from before: rebuilt by one writer, read by the rest
        target.parent.mkdir()
        target.write_text('{"rows": [0, 1')
    assert _all_at_once(_derive, str(target), str(log)) == [50000] * WRITERS
    assert log.read_text().count("built") == 1 and intact(target)
    assert sorted(p.name for p in target.parent.iterdir()) == [".data.json.lock", "data.json", "data.json.stamp.json"]


def _bench(cache: str, log: str, barrier) -> dict:
    import time

    from shared.exclusive import exclusive

    os.environ["REPLICATIONS_CACHE"] = cache
    barrier.wait()
    with exclusive() as alone:
        start = time.monotonic()
        time.sleep(0.3)
        end = time.monotonic()
    with open(log, "a") as f:
        f.write(f"{start} {end}\n")
    return alone


def test_benchmarks_under_the_exclusive_lock_never_overlap(tmp_path, fresh_cache):
    log = tmp_path / "held.log"
    records = _all_at_once(_bench, str(fresh_cache), str(log))
    spans = sorted(tuple(map(float, line.split())) for line in log.read_text().splitlines())
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))
    assert all({"how", "waited_s", "held_s", "load_1min_before", "load_1min_after"} <= set(r) for r in records)
    assert (fresh_cache / "locks" / "bench.lock").exists()
