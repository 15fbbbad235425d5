"""PSHGCN's datasets: the HGB node-classification graphs (mirror or official URL), and ogbn-mag."""

from __future__ import annotations

import torch
from omegaconf import DictConfig
from torch_geometric.data import HeteroData

from shared.data import DataError, cache_dir
from shared.data.hgb import load_hgb


def load_ogbn_mag() -> HeteroData:
    """ogbn-mag via torch_geometric's OGB_MAG (downloads ~400 MB mag.zip; internet needed)."""
    import torch_geometric.transforms as T
    from torch_geometric.datasets import OGB_MAG

    root = cache_dir() / "ogbn_mag"
    try:
        data = OGB_MAG(str(root), preprocess=None, transform=T.ToUndirected(merge=False))[0]
    except Exception as exc:  # PyG raises URLError/OSError variants when offline
        raise DataError(
            f"ogbn-mag could not be loaded into {root}: {exc}.\nFix: run on a machine with internet "
            "(PyG downloads http://snap.stanford.edu/ogb/data/nodeproppred/mag.zip), or place the "
            f"extracted files under {root}/mag/raw."
        ) from exc
    paper = data["paper"]
    paper.train_mask = paper.train_mask | paper.val_mask  # PSHGCN's val split is carved out per seed
    data.target_type, data.num_classes, data.multilabel = "paper", int(paper.y.max()) + 1, False
    return data


def load(cfg: DictConfig) -> HeteroData:
    if cfg.dataset.loader == "hgb":
        return load_hgb(cfg.dataset.name)
    if cfg.dataset.loader == "ogb":
        return load_ogbn_mag()
    raise ValueError(f"dataset '{cfg.dataset.name}': unknown loader '{cfg.dataset.loader}' (valid: hgb, ogb)")


SPARSE_BELOW = 0.1  # feature matrices with fewer non-zeros than this are multiplied as sparse


def features(data: HeteroData, device: str) -> dict[str, torch.Tensor | tuple[torch.Tensor, torch.Tensor]]:
    """Node features per type; sparse ones (bag-of-words) as (X, X^T) sparse pairs for TypeProjection."""
    out = {}
    for t in data.node_types:
        if "x" not in data[t]:
            continue
        x = data[t].x.to(device)
        if float((x != 0).float().mean()) < SPARSE_BELOW:
            out[t] = (x.to_sparse_csr(), x.t().contiguous().to_sparse_csr())
        else:
            out[t] = x
    return out
