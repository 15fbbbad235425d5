"""Data layer: declared files, fetched from a local mirror or the official URL, verified, cached."""

from shared.data.fetch import DataError, DatasetSpec, Packed, RemoteFile, cache_dir, fetch, mirror_dir

__all__ = ["DataError", "DatasetSpec", "Packed", "RemoteFile", "cache_dir", "fetch", "mirror_dir"]
