"""DOTA-v1.0 through shared.data: the devkit's example files (sha256-pinned) and the full dataset's layout.

The full DOTA-v1.0 (2,806 images: train 1,411, val 458, test 937) is distributed by its authors through
Google Drive / Baidu links behind https://captain-whu.github.io/DOTA/dataset.html, with no published
checksums. A user who has it lays it out as <REPLICATIONS_MIRROR>/DOTA-v1.0/{train,val}/{images,labelTxt}/
(the official zips extracted; test labels are not public: the test split is scored by the DOTA server).
The loader checks the image counts, and records a sha256 over the label files it read, so a result names
exactly which annotations it was computed on.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from replications.ppyoloe_r.boxes import poly_to_rbox
from replications.ppyoloe_r.dota_eval import DOTA_V1_CLASSES, Objects, parse_label_text
from replications.ppyoloe_r.dota_split import split
from shared.data import DataError, DatasetSpec, RemoteFile, fetch, mirror_dir

DEVKIT = "https://raw.githubusercontent.com/CAPTAIN-WHU/DOTA_devkit/99388551054be9a6dabb01c8bb2a7eb562d57b4f/example"
EXAMPLE_SHA256 = {  # DOTA-examples/PROVENANCE.md in the mirror, checked against the devkit at that commit
    "labelTxt/P0706.txt": "59be6ea2f68eeb2980ea0f48b02be86e271149541daefa76c645589627c5ab8f",
    "labelTxt/P0770.txt": "11a9ddca66c0e09605bae852551669f559abe61c9f6c8a319b70be4efd4d867b",
    "labelTxt/P1088.txt": "2975eb129e360f1ef3c4e913e092efdadaeac7f0a49ed5e52d89fd7dfd608aeb",
    "labelTxt/P1234.txt": "a5f124a876e43303a34484e743c3fa6d7dea2635e4df5d19936ca96dd91eb6e9",
    "labelTxt/P1888.txt": "ff931f52121c2763205c8f2b2752fbe81b772be026e18aacea5a57ecb3c498cd",
    "labelTxt/P2598.txt": "0c5ba1fd64bcb85c2cbbb3b0cb465475c7d54a8cf0ad451bd06f51ffdc113d80",
    "labelTxt/P2709.txt": "2b418945740a5d752684ce58db183c646aebe801abb2103add54e9fc21f99e7d",
    "images/P0706.png": "006e4032cafe0962e6e091c6d114507b4c459457d5e5743c4aff41da05730bf6",
    "images/P1888.png": "697c30cddbf7a779593c045852da7bd34656c212a49dff146c24e5c30aacb950",
}
EXAMPLES = DatasetSpec("dota_examples", "DOTA-examples",
                       tuple(RemoteFile(n, f"{DEVKIT}/{n}", sha) for n, sha in EXAMPLE_SHA256.items()),
                       note="the official DOTA devkit's example folder")
FULL_URL = "https://captain-whu.github.io/DOTA/dataset.html"
FULL_FOLDER = "DOTA-v1.0"
FULL_COUNTS = {"train": 1411, "val": 458}


def example_labels() -> dict[str, Objects]:
    paths = fetch(EXAMPLES)
    return {Path(n).stem: parse_label_text(p.read_text(), n) for n, p in paths.items() if n.startswith("labelTxt/")}


def example_images() -> dict[str, Path]:
    return {Path(n).stem: p for n, p in fetch(EXAMPLES).items() if n.startswith("images/")}


def full_root(root: Path | None = None) -> Path:
    base = root or (mirror_dir() / FULL_FOLDER if mirror_dir() else None)
    if base is None or not base.is_dir():
        raise DataError(
            f"DOTA-v1.0 is not available: {'REPLICATIONS_MIRROR is not set' if mirror_dir() is None else f'no folder {base}'}.\n"
            f"Fix: download DOTA-v1.0 (train and val images and labelTxt-v1.0) from {FULL_URL} (registration-free "
            f"Google Drive / Baidu links; no direct URL or checksum is published), extract it as "
            f"<mirror>/{FULL_FOLDER}/{{train,val}}/{{images,labelTxt}}/ and set REPLICATIONS_MIRROR=<mirror>.")
    return base


def read_split(root: Path, split_name: str) -> tuple[dict[str, Path], dict[str, Objects], str]:
    """Images and labels of one split; refuses a split with missing files. Returns a sha256 over the labels."""
    images = {p.stem: p for p in sorted((root / split_name / "images").glob("*.png"))}
    label_dir = root / split_name / "labelTxt"
    expected = FULL_COUNTS.get(split_name)
    if expected is not None and len(images) != expected:
        raise DataError(f"{root / split_name / 'images'} holds {len(images)} .png images; DOTA-v1.0 {split_name} has "
                        f"{expected}. Fix: extract every part of the official {split_name} images zip there.")
    digest = hashlib.sha256()
    labels = {}
    for stem in images:
        path = label_dir / f"{stem}.txt"
        if not path.exists():
            raise DataError(f"{path} is missing: every image needs its labelTxt file ({FULL_URL}).")
        raw = path.read_bytes()
        digest.update(raw)
        labels[stem] = parse_label_text(raw.decode("utf-8", "replace"), str(path))
    return images, labels, digest.hexdigest()


@dataclass
class PatchSet:
    """Training patches of large images, read lazily (the official prepare_data: size 1024, gap 200)."""

    entries: list[tuple[Path, int, int, torch.Tensor, torch.Tensor]]  # image, left, up, boxes [n, 5], labels [n]
    size: int
    classes: tuple[str, ...] = DOTA_V1_CLASSES

    def __len__(self) -> int:
        return len(self.entries)

    def item(self, i: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        path, left, up, boxes, labels = self.entries[i]
        with Image.open(path) as im:
            crop = np.asarray(im.convert("RGB").crop((left, up, left + self.size, up + self.size)))  # zero-padded
        return torch.from_numpy(crop.copy()).permute(2, 0, 1), boxes, labels


def patches(images: dict[str, Path], labels: dict[str, Objects], size: int = 1024, gap: int = 200,
            classes: tuple[str, ...] = DOTA_V1_CLASSES) -> PatchSet:
    entries = []
    for stem, path in images.items():
        with Image.open(path) as im:
            width, height = im.size
        for p in split(stem, labels[stem], width, height, size=size, gap=gap):
            keep = [i for i, c in enumerate(p.objects.classes) if c in classes]
            if not keep:
                continue
            rb = torch.tensor(np.array([poly_to_rbox(p.objects.polys[i]) for i in keep]), dtype=torch.float32)
            ok = (rb[:, 2] >= 2) & (rb[:, 3] >= 2)  # the official poly2rbox drops boxes under 2 pixels
            lab = torch.tensor([classes.index(p.objects.classes[i]) for i in keep])
            if ok.any():
                entries.append((path, p.left, p.up, rb[ok], lab[ok]))
    return PatchSet(entries, size, classes)
