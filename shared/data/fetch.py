"""Fetch declared dataset files: local mirror first, then the official URL; always sha256-verified.

Layout: a mirror (``$REPLICATIONS_MIRROR``) holds ``<folder>/<file>`` exactly like ``../shared/data``
and is only ever read. Downloads and extracted archives live in the cache
(``$REPLICATIONS_CACHE``, default ``~/.cache/replications``), written atomically: each writer under a name
of its own, renamed into place once verified, one writer at a time per entry (an flock on a hidden
``.<name>.lock`` beside it, shared.exclusive), so parallel runs on a cold cache (a joblib sweep) wait for
the first and use its copy. A file whose official
distribution is a zip is declared with ``Packed``: the mirror holds the file itself, a download fetches
and verifies the archive once, then extracts and verifies the member.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from shared.atomic import atomic_path, current_umask
from shared.cache_marker import claim_cache
from shared.exclusive import file_lock, lock_beside
from shared.paths import cache_folder
from shared.progress import bar

CHUNK = 1 << 20


class DataError(RuntimeError):
    """A dataset file is missing, corrupt or unreachable; the message says how to fix it."""


class NoSpaceError(DataError):
    """The cache's disk filled up while writing: not a download problem (fetch_file passes it on as it is)."""


def no_space(exc: OSError, doing: str, need: int | None = None) -> NoSpaceError | None:
    """The one-line error for a full disk under the cache (None when `exc` is another OSError). The writer's
    temporary file or folder is removed by its own cleanup (shared.atomic, extract_zip): nothing half is left."""
    if exc.errno != errno.ENOSPC:
        return None
    folder = cache_folder()
    try:
        free = f" ({shutil.disk_usage(folder).free / 1e9:.1f} GB free there now)"
    except OSError:
        free = ""
    amount = f"{need / 1e9:.1f} GB" if need else "space"
    return NoSpaceError(f"no space left on device while {doing} into {folder}{free}: free {amount} or set "
                        "REPLICATIONS_CACHE to a folder on a disk with room")


@dataclass(frozen=True)
class Packed:
    """The official distribution is a zip archive holding the file: the archive's own checksum and the member."""

    sha256: str  # of the archive as downloaded
    member: str  # the file's path inside the archive
    size: int | None = None  # archive bytes


@dataclass(frozen=True)
class RemoteFile:
    name: str  # path inside the dataset folder, as laid out in the mirror
    url: str  # official download address (the archive's, when `packed` is set)
    sha256: str | None  # of the file itself, as the mirror holds it (the member, when `packed` is set)
    size: int | None = None  # bytes; lets a truncated file be named as such
    packed: Packed | None = None  # set when `url` serves a zip with this file inside
    # `git hash-object` of the file, where that is all that was ever recorded of it (files published in a git
    # repository, e.g. the CARE-GNN zips): checked when sha256 is None. Neither known: nothing to check, said.
    git_blob: str | None = None

    def pin(self) -> str:
        """The checksum a user can check by hand, in words."""
        if self.sha256:
            return f"sha256 {self.sha256}"
        return f"git blob id {self.git_blob} (`git hash-object {self.name}`)" if self.git_blob else "no checksum known"

    def archive(self) -> RemoteFile:
        """The archive this file is extracted from, declared like a file of its own."""
        assert self.packed is not None
        name = self.url.rsplit("/", 1)[-1].split("?", 1)[0]
        return RemoteFile(name, self.url, self.packed.sha256, self.packed.size)


@dataclass(frozen=True)
class DatasetSpec:
    name: str  # the name users type: dataset=dblp
    folder: str  # folder in the mirror, e.g. "DBLP"
    files: tuple[RemoteFile, ...]
    note: str = ""  # shown in errors, e.g. where else to get it
    meta: dict = field(default_factory=dict, hash=False, compare=False)


def mirror_dir() -> Path | None:
    value = os.environ.get("REPLICATIONS_MIRROR")
    return Path(value).expanduser().resolve() if value else None


def cache_dir() -> Path:
    """The data cache (shared.paths.cache_folder), created on first use and marked as the suite's (make clean-cache)."""
    return claim_cache()


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def git_blob_id(path: Path) -> str:
    """What `git hash-object` prints: sha1 of b"blob <size>\\0" + content."""
    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(path: Path, remote: RemoteFile, origin: str) -> None:
    """Raise DataError unless `path` has the declared size and checksum (sha256, else git blob id)."""
    if path.is_dir():  # its st_size (4096) would read as "truncated"
        raise DataError(f"{path} ({origin}) is a folder, not the file {remote.name}: remove or rename that folder and put "
                        f"the file there ({remote.pin()}), or fetch it from {remote.url}")
    actual_size = path.stat().st_size
    if remote.size is not None and actual_size != remote.size:
        kind = "truncated" if actual_size < remote.size else "too large"
        raise DataError(
            f"{path} ({origin}) is {kind}: {actual_size} bytes, expected {remote.size}.\n"
            f"Fix: delete it and fetch again from {remote.url}"
        )
    if remote.sha256 is None:
        if remote.git_blob is not None and git_blob_id(path) != remote.git_blob:
            raise DataError(f"{path} ({origin}) is not the official file: git blob id {git_blob_id(path)}, "
                            f"expected {remote.git_blob}.\nFix: delete it and fetch it again from {remote.url}")
        return
    actual = sha256_of(path)
    if actual != remote.sha256:
        raise DataError(
            f"checksum mismatch for {path} ({origin}):\n  expected sha256 {remote.sha256}\n"
            f"  actual   sha256 {actual}\n"
            f"Fix: delete the file and fetch it again from {remote.url}; if it came from a mirror, "
            "the mirror copy is not the official file."
        )


def _download(remote: RemoteFile, target: Path) -> None:
    with atomic_path(target) as tmp:
        try:
            with urllib.request.urlopen(remote.url, timeout=60) as response, open(tmp, "wb") as out:
                total = int(response.headers.get("Content-Length") or remote.size or 0) or None
                with bar(total=total, unit="B", unit_scale=True, desc=f"download {remote.name}") as shown:
                    for block in iter(lambda: response.read(CHUNK), b""):
                        out.write(block)
                        shown.update(len(block))
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            if isinstance(exc, OSError) and (full := no_space(exc, f"downloading {remote.url}", remote.size)):
                raise full from None
            raise DataError(f"could not download {remote.url}: {exc}") from exc
        verify(tmp, remote, origin=f"downloaded from {remote.url}")  # refused before the rename


def _download_once(remote: RemoteFile, target: Path) -> None:
    """Download `remote` to `target` unless another writer did while this one waited for the lock."""
    with file_lock(lock_beside(target)):
        if target.exists():  # renamed into place only once verified: a finished copy
            verify(target, remote, origin="cache")
            return
        _download(remote, target)


def _download_member(spec: DatasetSpec, remote: RemoteFile, target: Path) -> None:
    """Download (once) and verify the archive, then extract and verify this one member."""
    archive = remote.archive()
    zipped = cache_dir() / "downloads" / spec.folder / archive.name
    if zipped.exists():
        verify(zipped, archive, origin="cache")
    else:
        _download_once(archive, zipped)
    with atomic_path(target) as tmp:
        try:
            with zipfile.ZipFile(zipped) as zf, zf.open(remote.packed.member) as src, open(tmp, "wb") as out:
                shutil.copyfileobj(src, out, CHUNK)
        except (KeyError, zipfile.BadZipFile) as exc:
            raise DataError(f"{zipped}: cannot extract {remote.packed.member} ({exc})") from exc
        except OSError as exc:
            if full := no_space(exc, f"extracting {remote.packed.member} of {zipped.name}", remote.size):
                raise full from None
            raise
        verify(tmp, remote, origin=f"{remote.packed.member} in {zipped}")


def check_mirror_level(mirror: Path, spec: DatasetSpec) -> None:
    """A mirror set one level too high (its parent) or too deep (one dataset's folder): say so, rather than
    "connect to the internet" for a file that is right there."""
    if (mirror / spec.folder).is_dir() or not mirror.is_dir():
        return
    near = [mirror.parent] if (mirror.parent / spec.folder).is_dir() else []
    try:
        near += sorted(child for child in mirror.iterdir() if (child / spec.folder).is_dir())
    except OSError:  # an unreadable mirror: the file checks below say what is missing
        pass
    if near:
        raise DataError(f"REPLICATIONS_MIRROR={os.environ.get('REPLICATIONS_MIRROR')} holds no dataset folders "
                        f"(expected e.g. {mirror / spec.folder}/...); did you mean REPLICATIONS_MIRROR={near[0]}?")


def fetch_file(spec: DatasetSpec, remote: RemoteFile) -> Path:
    """Return a verified local path for one declared file (mirror, else cache, else download)."""
    mirror = mirror_dir()
    if mirror is not None:
        check_mirror_level(mirror, spec)
        candidate = mirror / spec.folder / remote.name
        if candidate.exists():
            verify(candidate, remote, origin=f"mirror {mirror}")
            return candidate  # read in place: the mirror is never written
    cached = cache_dir() / "downloads" / spec.folder / remote.name
    if cached.exists():
        verify(cached, remote, origin="cache")
        return cached
    try:
        with file_lock(lock_beside(cached)):  # one writer; the others wait, then use its verified copy
            if cached.exists():
                verify(cached, remote, origin="cache")
            elif remote.packed is not None:
                _download_member(spec, remote, cached)
            else:
                _download(remote, cached)
    except NoSpaceError:
        raise  # its own fix: room on the disk, not the internet
    except DataError as exc:
        where = (
            f"not in the mirror ({mirror / spec.folder / remote.name})"
            if mirror
            else "REPLICATIONS_MIRROR is not set"
        )
        by_hand = (f"download {remote.url} yourself and extract its {remote.packed.member} to {cached}"
                   if remote.packed else f"download {remote.url} yourself and place it at {cached}")
        raise DataError(
            f"dataset '{spec.name}': file '{remote.name}' is unavailable: {where}, and {exc}.\n"
            f"Fix: connect to the internet, or {by_hand}, "
            f"or set REPLICATIONS_MIRROR to a folder holding {spec.folder}/{remote.name}; check it: {remote.pin()}."
            + (f"\nNote: {spec.note}" if spec.note else "")
        ) from exc
    return cached


def fetch(spec: DatasetSpec) -> dict[str, Path]:
    """Fetch every file of a dataset; returns {declared name: verified local path}."""
    return {remote.name: fetch_file(spec, remote) for remote in spec.files}


def extract_zip(archive: Path, sha256: str) -> Path:
    """Extract `archive` once into the cache and return that folder.

    Safe for parallel runs: the folder is checked under a shared lock, written under an exclusive one
    (a writer that finds a verified copy once it holds the lock uses it), each writer extracting into a
    temporary folder of its own that is renamed into place and stamped; a failed one is removed.
    """
    from shared.data.derived import discard, intact, stamp  # derived builds on this module

    target = cache_dir() / "extracted" / sha256[:16]
    lock = lock_beside(target)
    with file_lock(lock, shared=True):  # no writer is replacing it while it is checked
        if intact(target):  # every member as extracted (size + sha256): half a node.dat is never read
            return target
    with file_lock(lock):
        if intact(target):  # another run extracted it while this one waited
            return target
        if target.exists():
            print(f"note: re-extracting {archive} into {target}: its files differ from those extracted")
            discard(target)
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part"))
        try:
            with zipfile.ZipFile(archive) as zf:
                bad = zf.testzip()
                if bad is not None:
                    raise DataError(f"{archive}: member {bad} is corrupt. Fix: delete the archive and fetch again.")
                try:
                    zf.extractall(tmp)
                except OSError as exc:
                    if full := no_space(exc, f"extracting {archive.name}", sum(i.file_size for i in zf.infolist())):
                        raise full from None
                    raise
            os.chmod(tmp, 0o777 & ~current_umask())  # mkdtemp makes it 0700: give it a plain mkdir's mode
            os.replace(tmp, target)
        except zipfile.BadZipFile as exc:
            raise DataError(f"{archive} is not a valid zip ({exc}). Fix: delete it and fetch again.") from exc
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # gone already when renamed
        stamp(target)
    return target
