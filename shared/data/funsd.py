"""FUNSD (Jaume et al., ICDAR-OST 2019): 199 scanned forms (149 training, 50 test), a PNG and a JSON annotation each.

The one declaration of its files for every paper (mmLayout, PP-OCRv3, PP-StructureV2): manifests/funsd.sha256 lists
the sha256 of each of the 398 files, copied from the mirror's FUNSD/SHA256SUMS (whose PROVENANCE.md cross-checks
them against an independent upstream copy), in that order. Files are read in place from the mirror, else from the
cache; without either the official dataset.zip is the download address a user is pointed to (a plain fetch of the
zip's URL fails the file's checksum, so the fix named is to unzip it into the mirror).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from shared.data.fetch import DataError, DatasetSpec, RemoteFile

MANIFEST = Path(__file__).with_name("manifests") / "funsd.sha256"
URL = "https://guillaumejaume.github.io/FUNSD/dataset.zip"
SPLITS = {"train": "training_data", "test": "testing_data"}  # split -> folder under dataset/


def spec(splits: Sequence[str] = ("train", "test")) -> DatasetSpec:
    """The files of the given splits (annotations and images), in the manifest's order."""
    unknown = [s for s in splits if s not in SPLITS]
    if unknown or not splits:
        raise DataError(f"FUNSD has no split {', '.join(unknown) or '(none given)'}; valid: {', '.join(SPLITS)}")
    folders = [SPLITS[s] for s in SPLITS if s in splits]
    layout = folders[0] if len(folders) == 1 else "{" + ",".join(folders) + "}"
    files = []
    for line in MANIFEST.read_text().splitlines():
        sha, rel = line.split(maxsplit=1)
        if rel.split("/")[1] in folders:
            files.append(RemoteFile(name=rel, url=URL, sha256=sha))
    return DatasetSpec(name="funsd", folder="FUNSD", files=tuple(files),
                       note=f"unzip dataset.zip into <mirror>/FUNSD/ (keeps the dataset/{layout}/ layout)")


def annotations(paths: dict[str, Path], split: str) -> list[tuple[str, dict, Path]]:
    """(form id, parsed annotation JSON, image path) of every form of `split` among the fetched `paths`
    ({declared name: local path}, as `fetch(spec(...))` returns), sorted by form id."""
    prefix = f"dataset/{SPLITS[split]}/annotations/"
    out = []
    for rel in sorted(p for p in paths if p.startswith(prefix) and p.endswith(".json")):
        image = paths[rel.replace("annotations/", "images/").replace(".json", ".png")]
        out.append((Path(rel).stem, json.loads(paths[rel].read_text("utf-8")), image))
    return out
