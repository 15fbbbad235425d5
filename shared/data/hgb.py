"""HGB-format heterogeneous graphs (node.dat, link.dat, label.dat, label.dat.test) as PyG HeteroData.

Node types are named by their HGB type id ("0", "1", ...); edge types are ("src", "<link type id>", "dst").
Features: the vectors in node.dat where present; a featureless type gets ``x = None`` and its
``num_nodes`` (models decide how to embed it). Labels live on the target type as ``y``
(class index, or a multi-hot matrix for multi-label IMDB) with the official ``train_mask``
(label.dat) and ``test_mask`` (label.dat.test).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import HeteroData

from shared.data.derived import cached_file
from shared.data.fetch import DatasetSpec, RemoteFile, cache_dir, extract_zip, fetch

HGB_URL = "https://cloud.tsinghua.edu.cn/d/a2728e52cd4943efa389/files/?p=%2F{name}.zip&dl=1"
PARSER_VERSION = 1  # bump when parse_hgb changes, so cached .pt files are rebuilt
PSHGCN_RAW = "https://raw.githubusercontent.com/ivam-he/PSHGCN/f87406ce56ba3780d19aa540d3d1081ff085cca5/hgb/data/AMiner/{name}"


def _zip_spec(name: str, sha256: str, size: int) -> DatasetSpec:
    remote = RemoteFile(f"{name}.zip", HGB_URL.format(name=name), sha256, size)
    return DatasetSpec(name.lower(), name, (remote,), meta={"zip": True, "subdir": name})


HGB_DATASETS: dict[str, DatasetSpec] = {
    "dblp": _zip_spec("DBLP", "0d3ea4a74399f9cd3e83af206e8e0b67e1844fe2c8463b424189884dd58ad7c8", 2567741),
    "acm": _zip_spec("ACM", "787766fef7526310321b8ac94eb220209c0876a536f6603640d812220ca62134", 4131275),
    "imdb": _zip_spec("IMDB", "dc98438c28f738ab1e7ba07aaeca4fc2e035d837b7bb3955fdd4f61f14dd81e1", 2102389),
    "aminer": DatasetSpec(
        "aminer",
        "AMiner",
        tuple(
            RemoteFile(n, PSHGCN_RAW.format(name=n), h, s)
            for n, h, s in [
                ("node.dat", "b7b0fbd5f72f9123594d6f54232f1545d6b3f309c715611bc1131cd390b19602", 546720),
                ("link.dat", "951c8d5a1950b01837eae2a9f0ecf2b1a78fa79c759884e786bc80af73818913", 2726054),
                ("label.dat", "85ae66bbb2eb057d220155f639387b5c07e1437268f3ced53eea32a51df57c56", 21328),
                ("label.dat.test", "9e716144bba6b858bccfd621b03447bea43ed7b8f7c9d2270b157f8c420f37e4", 49766),
            ]
        ),
        note="HGB does not distribute AMiner; PSHGCN's authors commit it in their repository.",
    ),
}


def hgb_files(spec: DatasetSpec) -> Path:
    """Folder holding the dataset's .dat files (zip extracted into the cache if needed)."""
    paths = fetch(spec)
    if spec.meta.get("zip"):
        (remote,) = spec.files
        return extract_zip(paths[remote.name], remote.sha256) / spec.meta["subdir"]
    folders = {p.parent for p in paths.values()}
    assert len(folders) == 1, folders
    return folders.pop()


def _read_nodes(path: Path) -> tuple[dict[int, int], dict[int, int], dict[int, np.ndarray]]:
    """Returns per-type counts, per-type first id, and per-type feature matrices (when present)."""
    types: list[int] = []
    feats: dict[int, list[np.ndarray]] = defaultdict(list)
    ids: list[int] = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            node_id, node_type = int(cols[0]), int(cols[2])
            ids.append(node_id)
            types.append(node_type)
            if len(cols) >= 4 and cols[3]:
                feats[node_type].append(np.array(cols[3].split(","), dtype=np.float32))
    type_arr, id_arr = np.array(types), np.array(ids)
    counts, starts = {}, {}
    for t in sorted(set(types)):
        members = id_arr[type_arr == t]
        # HGB numbers nodes contiguously by type; everything below relies on it, so check it.
        if not (members.max() - members.min() + 1 == len(members)):
            raise ValueError(f"{path}: node ids of type {t} are not contiguous")
        counts[t], starts[t] = len(members), int(members.min())
    features = {t: np.stack(v) for t, v in feats.items() if len(v) == counts[t]}
    return counts, starts, features


def _read_labels(path: Path) -> tuple[np.ndarray, list[list[int]]]:
    nodes, labels = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            nodes.append(int(cols[0]))
            labels.append([int(c) for c in cols[3].split(",")])
    return np.array(nodes), labels


def parse_hgb(folder: Path) -> HeteroData:
    counts, starts, features = _read_nodes(folder / "node.dat")
    type_of = np.zeros(sum(counts.values()), dtype=np.int64)
    for t in counts:
        type_of[starts[t] : starts[t] + counts[t]] = t

    data = HeteroData()
    for t in counts:
        store = data[str(t)]
        store.num_nodes = counts[t]
        store.x = torch.from_numpy(features[t]) if t in features else None

    links = np.loadtxt(folder / "link.dat", dtype=np.float64, ndmin=2, usecols=(0, 1, 2))
    src, dst, rel = links[:, 0].astype(np.int64), links[:, 1].astype(np.int64), links[:, 2].astype(np.int64)
    for r in np.unique(rel):
        sel = rel == r
        s_type, d_type = int(type_of[src[sel][0]]), int(type_of[dst[sel][0]])
        local = np.stack([src[sel] - starts[s_type], dst[sel] - starts[d_type]])
        data[str(s_type), str(int(r)), str(d_type)].edge_index = torch.from_numpy(local)

    train_nodes, train_labels = _read_labels(folder / "label.dat")
    test_nodes, test_labels = _read_labels(folder / "label.dat.test")
    target = int(type_of[train_nodes[0]])
    all_labels = train_labels + test_labels
    num_classes = max(max(ls) for ls in all_labels) + 1
    multilabel = any(len(ls) > 1 for ls in all_labels)
    n = counts[target]
    if multilabel:
        y = torch.zeros(n, num_classes)
        for node, ls in zip(np.concatenate([train_nodes, test_nodes]), all_labels):
            y[node - starts[target], ls] = 1.0
    else:
        y = torch.full((n,), -1, dtype=torch.long)
        for node, ls in zip(np.concatenate([train_nodes, test_nodes]), all_labels):
            y[node - starts[target]] = ls[0]
    store = data[str(target)]
    store.y = y
    store.train_mask = torch.zeros(n, dtype=torch.bool)
    store.train_mask[torch.from_numpy(train_nodes - starts[target])] = True
    store.test_mask = torch.zeros(n, dtype=torch.bool)
    store.test_mask[torch.from_numpy(test_nodes - starts[target])] = True
    data.target_type = str(target)
    data.num_classes = num_classes
    data.multilabel = multilabel
    return data


def load_hgb(name: str) -> HeteroData:
    """Load an HGB dataset by name (dblp, acm, imdb, aminer); parsed once, then read from the cache."""
    if name not in HGB_DATASETS:
        raise KeyError(f"unknown HGB dataset '{name}'; valid: {', '.join(HGB_DATASETS)}")
    spec = HGB_DATASETS[name]
    processed = cache_dir() / "processed" / f"hgb_{name}_{spec.files[0].sha256[:12]}_v{PARSER_VERSION}.pt"
    # Verified against its stamp before each use; a truncated or corrupt file is parsed again from the source.
    return cached_file(processed, lambda: parse_hgb(hgb_files(spec)), torch.save,
                       lambda path: torch.load(path, weights_only=False))
