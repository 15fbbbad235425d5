"""ICDAR 2015 Task 4.1 test set and FUNSD test forms, as HuggingFace `datasets` built from local files.

Every file is declared with its sha256 (ICDAR 2015: manifests/icdar2015_test.sha256; FUNSD: shared.data.funsd, the
declaration every paper shares), taken from the mirror's SHA256SUMS, whose PROVENANCE.md cross-checks them against
independent upstream copies, and fetched through shared.data.
"""

from __future__ import annotations

from pathlib import Path

import datasets
import numpy as np
from omegaconf import DictConfig

from replications.ocr.regions import DONT_CARE, Regions
from shared.data import DataError, DatasetSpec, RemoteFile, fetch, funsd

MANIFESTS = Path(__file__).with_name("manifests")
SOURCES = {  # official distribution of each dataset (a user without the mirror downloads these); FUNSD: shared
    "icdar2015": ("ICDAR2015", "icdar2015_test.sha256", "https://rrc.cvc.uab.es/?ch=4&com=downloads",
                  "registration needed: Task 4.1 ch4_test_images.zip and Challenge4_Test_Task1_GT.zip; "
                  "unpack them into <mirror>/ICDAR2015/"),
    "funsd": None,  # the test split of shared.data.funsd
}


def spec(name: str) -> DatasetSpec:
    if name not in SOURCES:
        raise DataError(f"ppocrv3 has no dataset '{name}'; valid: {', '.join(SOURCES)}")
    if name == "funsd":
        return funsd.spec(("test",))
    folder, manifest, url, note = SOURCES[name]
    files = []
    for line in (MANIFESTS / manifest).read_text().splitlines():
        sha, rel = line.split(maxsplit=1)
        files.append(RemoteFile(name=rel, url=url, sha256=sha))
    return DatasetSpec(name=name, folder=folder, files=tuple(files), note=note)


def read_ic15_gt(text: str) -> tuple[list[list[float]], list[str]]:
    """One line per box: x1,y1,...,x4,y4,transcription. Split on the first 8 commas only (transcriptions
    may hold commas); strip the BOM some copies carry and CRLF."""
    polys, texts = [], []
    for line in text.replace("\ufeff", "").splitlines():
        line = line.strip("\r")
        if not line.strip():
            continue
        parts = line.split(",", 8)
        if len(parts) != 9:
            raise DataError(f"malformed ICDAR 2015 ground-truth line: {line!r}")
        polys.append([float(v) for v in parts[:8]])
        texts.append(parts[8])
    return polys, texts


def _icdar2015(paths: dict[str, Path]) -> list[dict]:
    rows = []
    for i in range(1, 501):
        polys, texts = read_ic15_gt(paths[f"Challenge4_Test_Task1_GT/gt_img_{i}.txt"].read_text("utf-8"))
        rows.append({"image_id": f"img_{i}", "image_path": str(paths[f"ch4_test_images/img_{i}.jpg"]),
                     "polygons": polys, "texts": texts, "dont_care": [t == DONT_CARE for t in texts]})
    return rows


def _funsd(paths: dict[str, Path]) -> list[dict]:
    rows = []
    for stem, annotation, image in funsd.annotations(paths, "test"):
        polys, texts = [], []
        for entity in annotation["form"]:
            for word in entity["words"]:
                x0, y0, x1, y1 = (float(v) for v in word["box"])
                polys.append([x0, y0, x1, y0, x1, y1, x0, y1])
                texts.append(word["text"])
        # Words with empty text (266 of 8,973 in the test split) cannot be scored: treated as don't care.
        rows.append({"image_id": stem, "image_path": str(image), "polygons": polys, "texts": texts,
                     "dont_care": [not t.strip() for t in texts]})
    return rows


def load(cfg: DictConfig) -> datasets.Dataset:
    """The test split of cfg.dataset.name as a `datasets.Dataset` (one row per image)."""
    paths = fetch(spec(cfg.dataset.name))
    rows = _icdar2015(paths) if cfg.dataset.name == "icdar2015" else _funsd(paths)
    limit = cfg.paper.protocol.get("smoke_images") if cfg.scale.name == "smoke" else None
    if limit:
        rows = rows[: int(limit)]
    features = datasets.Features({
        "image_id": datasets.Value("string"), "image_path": datasets.Value("string"),
        "polygons": datasets.Sequence(datasets.Sequence(datasets.Value("float64"))),
        "texts": datasets.Sequence(datasets.Value("string")), "dont_care": datasets.Sequence(datasets.Value("bool")),
    })
    return datasets.Dataset.from_list(rows, features=features)


def regions(row: dict) -> Regions:
    return Regions([np.asarray(p, float).reshape(-1, 2) for p in row["polygons"]], list(row["texts"]),
                   list(row["dont_care"]))
