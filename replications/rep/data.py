"""FB15k-237 and WN18RR (mirror or official URL, sha256-verified), and ogbl-wikikg2 through OGB.

The split files are the exact ones torch_geometric's ``FB15k_237`` / ``WordNet18RR`` loaders download.
They are parsed here in place (read only, nothing is unzipped or written next to them); ids follow
torch_geometric's order of first appearance over train, then valid, then test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from shared.data import DataError, DatasetSpec, RemoteFile, cache_dir, fetch

VILLMOW = "https://raw.githubusercontent.com/villmow/datasets_knowledge_embedding/master"
SPECS = {  # sha256/size: the mirror's PROVENANCE.md, checked against upstream git blob ids there
    "fb15k_237": DatasetSpec("fb15k_237", "FB15k-237", (
        RemoteFile("raw/train.txt", f"{VILLMOW}/FB15k-237/train.txt",
                   "61099230e4439f90885ca9767739e31e8e32f54736fa1c35952b27997bc7c08a", 21005177),
        RemoteFile("raw/valid.txt", f"{VILLMOW}/FB15k-237/valid.txt",
                   "749cbe9d923bac7b9354da5614ecfed2e0220256d442c3e04a6b303db1f273d9", 1285566),
        RemoteFile("raw/test.txt", f"{VILLMOW}/FB15k-237/test.txt",
                   "e2e35e8e6113de220140b6f44dc71a5207b0fc6872d575e874aefe13259b655b", 1499033),
    ), note="torch_geometric.datasets.FB15k_237 downloads the same three files"),
    "wn18rr": DatasetSpec("wn18rr", "WN18RR", (
        RemoteFile("raw/train.txt", f"{VILLMOW}/WN18RR/original/train.txt",
                   "038612e783c215ee5f3ca9fbfca27b8d0739be1028fe4ee7c174aecf0b83d5df", 3135377),
        RemoteFile("raw/valid.txt", f"{VILLMOW}/WN18RR/original/valid.txt",
                   "453ce7202afa58094a04d2b1560ee2b02660f1c260b32ce6651c8ccedd1028ab", 110415),
        RemoteFile("raw/test.txt", f"{VILLMOW}/WN18RR/original/test.txt",
                   "0383bceaaa1096cf3c03ec021ed0048068e2355dbfc0239b292cefdac821cec5", 113180),
    ), note="torch_geometric.datasets.WordNet18RR downloads the same three files"),
}
SPLITS = ("train", "valid", "test")


@dataclass
class KG:
    """Triples as LongTensor (n, 3) rows (head, relation, tail)."""

    name: str
    num_entities: int
    num_relations: int
    train: torch.Tensor
    valid: torch.Tensor
    test: torch.Tensor
    # ogbl-wikikg2 only: OGB's 500 head/tail negatives per valid/test triple and its evaluator.
    candidates: dict[str, dict[str, torch.Tensor]] = field(default_factory=dict)
    evaluator: object | None = None

    def all_true(self) -> torch.Tensor:
        return torch.cat([self.train, self.valid, self.test])


def read_split(path: Path) -> list[tuple[str, str, str]]:
    """The (head, relation, tail) names of one ``head<TAB>relation<TAB>tail`` file, blank lines skipped."""
    rows = []
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 3:
            raise DataError(f"{path}:{lineno}: expected 3 tab-separated fields, got {len(parts)}")
        h, r, t = (p.strip() for p in parts)
        rows.append((h, r, t))
    return rows


def parse_triples(paths: dict[str, Path]) -> tuple[dict[str, torch.Tensor], int, int]:
    """Read the split files (``read_split``); ids in order of first appearance (train, valid, test)."""
    ent: dict[str, int] = {}
    rel: dict[str, int] = {}
    out = {}
    for split in SPLITS:
        rows = [(ent.setdefault(h, len(ent)), rel.setdefault(r, len(rel)), ent.setdefault(t, len(ent)))
                for h, r, t in read_split(paths[split])]
        if not rows:
            raise DataError(f"{paths[split]} holds no triples")
        out[split] = torch.tensor(rows, dtype=torch.long)
    return out, len(ent), len(rel)


def load_text_kg(name: str) -> KG:
    if name not in SPECS:
        raise ValueError(f"unknown dataset '{name}'; valid: {', '.join(SPECS)}, ogbl_wikikg2")
    files = fetch(SPECS[name])
    splits, n_ent, n_rel = parse_triples({s: files[f"raw/{s}.txt"] for s in SPLITS})
    return KG(name, n_ent, n_rel, splits["train"], splits["valid"], splits["test"])


def load_wikikg2() -> KG:
    """ogbl-wikikg2 through the ``ogb`` package (downloads ~1 GB; internet needed; not run here)."""
    try:
        from ogb.linkproppred import Evaluator, LinkPropPredDataset
    except ImportError as exc:
        raise DataError("ogbl-wikikg2 needs the `ogb` package: pip install ogb (and internet for the "
                        "first download)") from exc
    root = cache_dir() / "ogb"
    try:
        split = LinkPropPredDataset(name="ogbl-wikikg2", root=str(root)).get_edge_split()
    except Exception as exc:  # ogb raises URLError/OSError variants when offline
        raise DataError(f"ogbl-wikikg2 could not be loaded into {root}: {exc}") from exc

    def triples(part: dict) -> torch.Tensor:
        return torch.stack([torch.as_tensor(part[k]).long() for k in ("head", "relation", "tail")], 1)

    tr = triples(split["train"])
    kg = KG("ogbl_wikikg2", 2500604, 535, tr, triples(split["valid"]), triples(split["test"]),
            evaluator=Evaluator(name="ogbl-wikikg2"))
    for s in ("valid", "test"):
        kg.candidates[s] = {k: torch.as_tensor(split[s][k]).long() for k in ("head_neg", "tail_neg")}
    return kg


def load(name: str) -> KG:
    return load_wikikg2() if name == "ogbl_wikikg2" else load_text_kg(name)
