"""Datasets: PubTabNet validation tables (the authors' 20-table mini set, or the full 9,115-table split from a
user's download), PubLayNet's 20 example pages, FUNSD test forms (entities and links).

The mini set, the PubLayNet examples and FUNSD (in shared.data.funsd, the declaration every paper shares) are
declared file by file with their sha256 (the mirror's PROVENANCE.md / SHA256SUMS) and fetched through shared.data.
The full PubTabNet is a 12 GB tar.gz (`PubTabNet_2.0.0.jsonl` + images) whose checksum is not published and could
not be computed here (no copy is reachable from this machine): the loader names the URL, checks what it can (the
validation split has 9,115 tables, every image present) and records the sha256 of the annotation file it read.
"""

from __future__ import annotations

import json
from pathlib import Path

import datasets
from omegaconf import DictConfig, OmegaConf

from replications.ppstructurev2.slanet import is_complex, merge_tokens, structure_of_html, to_html
from shared.data import DataError, DatasetSpec, RemoteFile, cache_dir, fetch, funsd, mirror_dir
from shared.data.fetch import extract_zip, sha256_of

PUBTABNET_COMMIT = "8ffde9024bd331f5a61c3c549fdf30dd3c3e43a5"
_RAW = f"https://raw.githubusercontent.com/ibm-aur-nlp/PubTabNet/{PUBTABNET_COMMIT}"
MINI = DatasetSpec("pubtabnet_mini", "PubTabNet-mini", (
    RemoteFile("val_mini.zip", f"{_RAW}/ICDAR_SLR_competition/val_mini.zip",
               "2d23c0372e957be4447e197337bce4987c096d19024a8bc587b13cf194690986", 340368),
    RemoteFile("sample_gt.json", f"{_RAW}/src/sample_gt.json",
               "22d72df4640037f21f75440644a5deee621f129c3aab7adcc43713db731476ce", 30721),
), note="the 20 validation tables the PubTabNet authors publish (ibm-aur-nlp/PubTabNet)")

PUBTABNET_URL = "https://dax-cdn.cdn.appdomain.cloud/dax-pubtabnet/2.0.0/pubtabnet.tar.gz"
PUBTABNET_VAL_TABLES = 9115  # PubTabNet 2.0.0 README: 9,115 validation tables

PUBLAYNET_COMMIT = "a9a8113e2336612e33eb4e49113e03137dd817af"


MANIFESTS = Path(__file__).with_name("manifests")
FILE_SOURCES = {  # dataset -> (mirror folder, manifest, official URL of the files, note)
    "publaynet_examples": ("PubLayNet-examples", "publaynet_examples.sha256",
                           f"https://raw.githubusercontent.com/ibm-aur-nlp/PubLayNet/{PUBLAYNET_COMMIT}/",
                           "the 20 example pages of ibm-aur-nlp/PubLayNet (examples/), not its val split"),
}  # FUNSD: the test split of shared.data.funsd


def file_spec(name: str) -> DatasetSpec:
    if name == "funsd":
        return funsd.spec(("test",))
    folder, manifest, url, note = FILE_SOURCES[name]
    files = []
    for line in (MANIFESTS / manifest).read_text().splitlines():
        sha, rel = line.split(maxsplit=1)
        files.append(RemoteFile(name=rel, url=url + rel if url.endswith("/") else url, sha256=sha))
    return DatasetSpec(name=name, folder=folder, files=tuple(files), note=note)


def load_table_mini() -> list[dict]:
    paths = fetch(MINI)
    images = extract_zip(paths["val_mini.zip"], MINI.files[0].sha256)
    gt = json.loads(paths["sample_gt.json"].read_text("utf-8"))
    rows = []
    for name in sorted(gt):
        found = list(images.rglob(name))
        if not found:
            raise DataError(f"{name} is in sample_gt.json but not in val_mini.zip")
        tokens, _ = structure_of_html(gt[name]["html"])
        rows.append({"image_id": name, "image_path": str(found[0]), "html": gt[name]["html"],
                     "structure": tokens, "type": gt[name]["type"]})
    return rows


def pubtabnet_root() -> Path:
    """<mirror or cache>/PubTabNet/pubtabnet, holding PubTabNet_2.0.0.jsonl and val/."""
    candidates = [m / "PubTabNet" / "pubtabnet" for m in (mirror_dir(),) if m is not None]
    candidates.append(cache_dir() / "downloads" / "PubTabNet" / "pubtabnet")
    for c in candidates:
        if (c / "PubTabNet_2.0.0.jsonl").exists():
            return c
    raise DataError(
        "dataset 'pubtabnet' (the full validation split, 9,115 tables) is not here: looked for "
        + " and ".join(str(c / "PubTabNet_2.0.0.jsonl") for c in candidates) + ".\n"
        f"Fix: download {PUBTABNET_URL} (about 12 GB; registration-free) and unpack it with "
        f"`tar -xzf pubtabnet.tar.gz -C {candidates[-1].parent}` (it creates pubtabnet/ with PubTabNet_2.0.0.jsonl, "
        "train/, val/, test/), or set REPLICATIONS_MIRROR to a folder holding PubTabNet/pubtabnet/. "
        "Offline, run dataset=pubtabnet_mini (the authors' 20 validation tables).")


def read_pubtabnet_val(root: Path) -> list[dict]:
    """Validation rows of PubTabNet_2.0.0.jsonl, ground-truth HTML rebuilt from structure + cell tokens."""
    rows = []
    with open(root / "PubTabNet_2.0.0.jsonl", encoding="utf-8") as f:
        for line in f:
            if '"split": "val"' not in line and '"split":"val"' not in line:
                continue
            item = json.loads(line)
            if item["split"] != "val":
                continue
            structure = merge_tokens(item["html"]["structure"]["tokens"])
            contents = ["".join(c["tokens"]) for c in item["html"]["cells"]]
            image = root / "val" / item["filename"]
            if not image.exists():
                raise DataError(f"{image} is missing: the download is incomplete. Fix: unpack pubtabnet.tar.gz again.")
            rows.append({"image_id": item["filename"], "image_path": str(image), "html": to_html(structure, contents),
                         "structure": structure, "type": "complex" if is_complex(structure) else "simple"})
    if len(rows) != PUBTABNET_VAL_TABLES:
        raise DataError(f"{root / 'PubTabNet_2.0.0.jsonl'} has {len(rows)} validation tables, PubTabNet 2.0.0 has "
                        f"{PUBTABNET_VAL_TABLES}. Fix: download {PUBTABNET_URL} again (a different release or a truncated file).")
    return rows


def load_tables(cfg: DictConfig) -> datasets.Dataset:
    if cfg.dataset.name == "pubtabnet_mini":
        rows = load_table_mini()
        source = {"sha256": {f.name: f.sha256 for f in MINI.files}}
    else:
        root = pubtabnet_root()
        rows = read_pubtabnet_val(root)
        source = {"sha256": {"PubTabNet_2.0.0.jsonl": sha256_of(root / "PubTabNet_2.0.0.jsonl")}}
    limit = cfg.paper.protocol.get("smoke_items") if cfg.scale.name == "smoke" else None
    if limit:
        rows = rows[: int(limit)]
    ds = datasets.Dataset.from_list(rows)
    ds.info.description = json.dumps(source)
    return ds


def load_pages(cfg: DictConfig) -> datasets.Dataset:
    """PubLayNet example pages with their COCO boxes (x, y, w, h) and category names."""
    paths = fetch(file_spec("publaynet_examples"))
    coco = json.loads(paths["examples/samples.json"].read_text("utf-8"))
    names = {c["id"]: c["name"] for c in coco["categories"]}
    by_image: dict[int, list[dict]] = {}
    for a in coco["annotations"]:
        by_image.setdefault(a["image_id"], []).append(a)
    rows = []
    for img in sorted(coco["images"], key=lambda i: i["file_name"]):
        anns = by_image.get(img["id"], [])
        rows.append({"image_id": img["file_name"], "image_path": str(paths[f"examples/{img['file_name']}"]),
                     "boxes": [a["bbox"] for a in anns], "labels": [names[a["category_id"]] for a in anns]})
    limit = cfg.paper.protocol.get("smoke_items") if cfg.scale.name == "smoke" else None
    return datasets.Dataset.from_list(rows[: int(limit)] if limit else rows)


def load_funsd_forms() -> list[dict]:
    """FUNSD test forms: entities (id, label, words with boxes, text) and links, as annotated."""
    paths = fetch(file_spec("funsd"))
    return [{"form_id": form_id, "entities": annotation["form"]}
            for form_id, annotation, _ in funsd.annotations(paths, "test")]


def image_paths(dataset: str) -> dict[str, str]:
    """image id -> local path, through the loaders (details files hold no machine paths)."""
    if dataset == "pubtabnet_mini":
        return {r["image_id"]: r["image_path"] for r in load_table_mini()}
    if dataset == "pubtabnet":
        return {r["image_id"]: r["image_path"] for r in read_pubtabnet_val(pubtabnet_root())}
    cfg = OmegaConf.create({"scale": {"name": "full"}, "paper": {"protocol": {}}})
    return {r["image_id"]: r["image_path"] for r in load_pages(cfg)}
