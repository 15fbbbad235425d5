"""GAGA's datasets: Tolokers (in the mirror), YelpChi and Amazon (CARE-GNN .mat), T-Finance (not a GAGA dataset).

Every graph is returned the same way (`FraudGraph`): row-normalised float32 features, 0/1 labels,
one symmetric binary CSR adjacency per relation (no self-loops; grouping adds them), and its splits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.io
import scipy.sparse as sp

from shared.data import DataError, DatasetSpec, RemoteFile, cache_dir, fetch, mirror_dir
from shared.data.fetch import extract_zip

TOLOKERS = DatasetSpec(
    name="tolokers", folder="tolokers",
    files=(RemoteFile("tolokers.npz",
                      "https://github.com/yandex-research/heterophilous-graphs/raw/main/data/tolokers.npz",
                      "dacf3ac94cec53d03cd2adb5255c08b33dee1656c33ca8164a464bd9450a1667", 1329769),),
    note="Platonov et al., ICLR 2023 (heterophilous-graphs, commit a431395); 10 official 50/25/25 splits.")


@dataclass(frozen=True)
class MatDataset:
    name: str
    folder: str  # folder in the mirror / cache
    archive: RemoteFile  # pinned by its git blob id: all that is known of the CARE-GNN zips (no sha256 recorded)
    mat: str  # file inside the zip
    relations: tuple[str, ...]  # official FraudDataset.relations order
    unlabelled_below: int = 0  # Amazon: nodes 0..3304 are unlabelled and left out of every split
    note: str = ""


YELPCHI = MatDataset(
    "yelpchi", "YelpChi",
    RemoteFile("YelpChi.zip", "https://github.com/YingtongDou/CARE-GNN/raw/master/data/YelpChi.zip", None,
               git_blob="cefd1e52f05415a3426ad64bbcd136d81b81d64a"),
    "YelpChi.mat", ("net_rsr", "net_rtr", "net_rur"),
    note="CARE-GNN (Dou et al., CIKM 2020) data/YelpChi.zip; see YelpChi/PROVENANCE.md in the data mirror. "
         "(DGL's https://data.dgl.ai/dataset/FraudYelp.zip, which the official GAGA code reads, is not pinned.)")
AMAZON = MatDataset(
    "amazon", "Amazon",
    RemoteFile("Amazon.zip", "https://github.com/YingtongDou/CARE-GNN/raw/master/data/Amazon.zip", None,
               git_blob="9f5cbfdec3269139b1d030783fc25757074be405"),
    "Amazon.mat", ("net_upu", "net_usu", "net_uvu"), unlabelled_below=3305,
    note="CARE-GNN data/Amazon.zip; see Amazon/PROVENANCE.md in the data mirror. "
         "(DGL's https://data.dgl.ai/dataset/FraudAmazon.zip, which the official GAGA code reads, is not pinned.)")
TFINANCE_NOTE = (
    "T-Finance is NOT a dataset of the GAGA paper (its abstract names two public datasets and an industrial "
    "one; see the fact sheet). It comes from BWGNN (Tang et al., ICML 2022), whose README points to a Google "
    "Drive folder (https://drive.google.com/drive/folders/1PpNwvZx_YRSCDiHaBUmRIS3x1rZR7fMr) holding "
    "tfinance.zip, a DGL graph binary that needs `dgl` to read. No checksum is known. Download and unzip it, "
    "then convert it to tfinance.npz (keys: node_features (N,10), node_labels (N,), edges (E,2)) and place "
    "that at {target}."
)


@dataclass
class FraudGraph:
    name: str
    x: np.ndarray  # (N, F) float32
    y: np.ndarray  # (N,) int64, 0 benign / 1 fraud
    relations: dict[str, sp.csr_matrix]  # symmetric, binary, no self-loops
    splits: list[tuple[np.ndarray, np.ndarray, np.ndarray]]  # (train, val, test) node ids

    def split(self, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One fixed split (YelpChi/Amazon: seed 717) for every seed, or split `seed` of several (Tolokers)."""
        if len(self.splits) == 1:
            return self.splits[0]
        if not 0 <= seed < len(self.splits):
            raise ValueError(f"{self.name} has {len(self.splits)} official splits; seed {seed} names none "
                             f"(use 0..{len(self.splits) - 1})")
        return self.splits[seed]


def row_normalize(x: np.ndarray) -> np.ndarray:
    """Official data_helper.row_normalize: x / (row sum + 0.01) (graphsage-simple's rule)."""
    x = np.asarray(x, dtype=np.float64)
    return (x / (x.sum(axis=1, keepdims=True) + 0.01)).astype(np.float32)


def symmetric_binary(adj: sp.spmatrix) -> sp.csr_matrix:
    a = sp.csr_matrix(adj, dtype=np.float32)
    a = ((a + a.T) > 0).astype(np.float32).tocsr()
    a.setdiag(0)  # grouping adds self-loops itself (official: remove_self_loop then add_self_loop)
    a.eliminate_zeros()
    return a


def official_split(n: int, seed: int = 717, train: float = 0.4, val: float = 0.1,
                   start: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """FraudDataset._random_split: permute ids start..n-1; first 40% train, last 10% val, middle test."""
    index = np.random.RandomState(seed).permutation(np.arange(start, n))
    m = len(index)
    n_train, n_val = int(train * m), int(val * m)
    return np.sort(index[:n_train]), np.sort(index[m - n_val:]), np.sort(index[n_train:m - n_val])


def load_tolokers(normalize: bool = True) -> FraudGraph:
    path = fetch(TOLOKERS)["tolokers.npz"]
    with np.load(path) as d:
        x, y, edges = d["node_features"], d["node_labels"].astype(np.int64), d["edges"]
        masks = d["train_masks"], d["val_masks"], d["test_masks"]
    n = x.shape[0]
    adj = sp.coo_matrix((np.ones(len(edges), np.float32), (edges[:, 0], edges[:, 1])), shape=(n, n))
    splits = [tuple(np.nonzero(m[i])[0] for m in masks) for i in range(masks[0].shape[0])]
    return FraudGraph("tolokers", row_normalize(x) if normalize else x.astype(np.float32), y,
                      {"worker-task-worker": symmetric_binary(adj)}, splits)


def load_mat(spec: MatDataset, normalize: bool = True, seed: int = 717, train: float = 0.4,
             val: float = 0.1) -> FraudGraph:
    archive = fetch(DatasetSpec(spec.name, spec.folder, (spec.archive,), spec.note))[spec.archive.name]
    folder = extract_zip(archive, spec.archive.git_blob or "unpinned-" + spec.name)
    found = sorted(folder.rglob(spec.mat))
    if not found:
        raise DataError(f"{archive} holds no {spec.mat}. Fix: delete it and download {spec.archive.url} again.")
    mat = scipy.io.loadmat(found[0])
    feats = mat["features"]
    x = np.asarray(feats.todense() if sp.issparse(feats) else feats, dtype=np.float64)
    y = np.asarray(mat["label"]).reshape(-1).astype(np.int64)
    relations = {r: symmetric_binary(mat[r]) for r in spec.relations}
    split = official_split(x.shape[0], seed, train, val, start=spec.unlabelled_below)
    return FraudGraph(spec.name, row_normalize(x) if normalize else x.astype(np.float32), y, relations, [split])


def load_tfinance(normalize: bool = True) -> FraudGraph:
    target = cache_dir() / "downloads" / "T-Finance" / "tfinance.npz"
    mirror = mirror_dir()
    candidates = ([mirror / "T-Finance" / "tfinance.npz"] if mirror else []) + [target]
    path = next((p for p in candidates if p.exists()), None)
    if path is None:
        raise DataError("dataset 'tfinance' is unavailable offline. " + TFINANCE_NOTE.format(target=target))
    with np.load(path) as d:
        x, y, edges = d["node_features"], d["node_labels"].astype(np.int64), d["edges"]
    n = x.shape[0]
    adj = sp.coo_matrix((np.ones(len(edges), np.float32), (edges[:, 0], edges[:, 1])), shape=(n, n))
    # Our choice: GAGA's own 40/10/50 seed-717 split (BWGNN uses a stratified one; T-Finance has no official split).
    return FraudGraph("tfinance", row_normalize(x) if normalize else x.astype(np.float32), y,
                      {"homo": symmetric_binary(adj)}, [official_split(n)])


def load(name: str, normalize: bool = True) -> FraudGraph:
    loaders = {"tolokers": lambda: load_tolokers(normalize), "yelpchi": lambda: load_mat(YELPCHI, normalize),
               "amazon": lambda: load_mat(AMAZON, normalize), "tfinance": lambda: load_tfinance(normalize)}
    if name not in loaders:
        raise ValueError(f"unknown GAGA dataset '{name}'; valid: {', '.join(loaders)}")
    return loaders[name]()
