"""GAGA (Wang et al., WWW 2023) and MLP / GraphSAGE / BWGNN baselines under GAGA's official protocol."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from omegaconf import DictConfig

from replications.gaga import data as gdata
from replications.gaga.baselines import BWGNN, MLP, GraphSAGE, normalized_adjacency
from replications.gaga.grouping import group_ids, group_sequences
from replications.gaga.metrics import evaluate_split
from replications.gaga.model import GAGA
from replications.gaga.train import fit, predict, steps_per_epoch
from shared.atomic import write_text_atomic
from shared.config_check import given
from shared.replication import LogFn, Replication
from shared.runner import result_path

MODELS = ("gaga", "mlp", "graphsage", "bwgnn")


def union_edge_index(graph: gdata.FraudGraph) -> torch.Tensor:
    """Homogeneous view for the GNN baselines: the union of all relations (what dgl.to_homogeneous +
    to_simple gives BWGNN's homo mode), both directions, no self-loops."""
    union = sum(graph.relations.values(), sp.csr_matrix(next(iter(graph.relations.values())).shape, dtype=np.float32))
    coo = (union > 0).tocoo()
    return torch.from_numpy(np.vstack([coo.row, coo.col]).astype(np.int64))


class GAGAReplication(Replication):
    name = "gaga"
    paper_file = Path(__file__).with_name("paper.yaml")

    def load_data(self, cfg: DictConfig) -> dict[str, Any]:
        return self.prepare(cfg, gdata.load(cfg.dataset.name, normalize=cfg.dataset.get("row_normalize", True)))

    def prepare(self, cfg: DictConfig, graph: gdata.FraudGraph) -> dict[str, Any]:
        """Tensors for cfg.model from any FraudGraph (also the synthetic ones of the tests)."""
        out: dict[str, Any] = {"graph": graph, "x": torch.from_numpy(graph.x).to(cfg.device),
                               "y": torch.from_numpy(graph.y).to(cfg.device), "sequences": {}}
        n = graph.x.shape[0]
        if cfg.model.name == "graphsage":
            ei = union_edge_index(graph)
            out["adj"] = torch.sparse_coo_tensor(ei.flip(0), torch.ones(ei.shape[1]), (n, n)).coalesce() \
                .to_sparse_csr().to(cfg.device)
        elif cfg.model.name == "bwgnn":
            out["adj"] = normalized_adjacency(union_edge_index(graph), n).to(cfg.device)
        return out

    def _sequences(self, cfg: DictConfig, data: dict[str, Any], seed: int) -> torch.Tensor:
        """Group sequences for this seed's split (cached: one computation per distinct split)."""
        graph = data["graph"]
        train_idx, _, _ = graph.split(seed)
        key = hash(train_idx.tobytes())
        if key not in data["sequences"]:
            t0 = time.perf_counter()
            seq = group_sequences(list(graph.relations.values()), graph.x, group_ids(graph.y, train_idx),
                                  hops=cfg.model.hops, block=cfg.model.block, workers=cfg.model.workers)
            data["sequences"] = {key: torch.from_numpy(seq).to(cfg.device)}  # keep one split in memory
            data["grouping_seconds"] = round(time.perf_counter() - t0, 2)
        return data["sequences"][key]

    def build_model(self, cfg: DictConfig, data: dict[str, Any]) -> torch.nn.Module:
        m, graph = cfg.model, data["graph"]
        feat = graph.x.shape[1]
        if m.name == "gaga":
            model = GAGA(feat, m.emb_dim, m.ff_dim, m.layers, m.heads, m.hops, len(graph.relations), m.dropout)
        elif m.name == "mlp":
            model = MLP(feat, m.hidden, m.layers, m.dropout)
        elif m.name == "graphsage":
            model = GraphSAGE(feat, m.hidden, m.layers, m.dropout)
        elif m.name == "bwgnn":
            model = BWGNN(feat, m.hidden, m.order)
        else:
            raise ValueError(f"unknown model '{m.name}' for gaga; valid: {', '.join(MODELS)}")
        return model.to(cfg.device)

    def _forward(self, cfg: DictConfig, model: torch.nn.Module, data: dict[str, Any], seed: int):
        name = cfg.model.name
        if name == "gaga":
            seq = self._sequences(cfg, data, seed)
            return lambda idx: model(seq[idx])
        if name == "mlp":
            return lambda idx: model(data["x"][idx])
        return lambda idx: model(data["x"], data["adj"])[idx]  # full-batch GNN

    def train(self, cfg: DictConfig, model: torch.nn.Module, data: dict[str, Any], seed: int, log: LogFn) -> dict:
        m, protocol, graph = cfg.model, cfg.paper.protocol, data["graph"]
        train_idx, val_idx, test_idx = (torch.from_numpy(a).to(cfg.device) for a in graph.split(seed))
        forward = self._forward(cfg, model, data, seed)
        data["current"] = (forward, val_idx, test_idx)  # evaluate() scores this seed's split
        weight = None
        if m.get("class_weighted_loss"):  # BWGNN: weight of class 1 = #neg / #pos among train nodes
            y_tr = data["y"][train_idx].float()
            weight = torch.tensor([1.0, float((1 - y_tr).sum() / y_tr.sum())], device=cfg.device)
        optimizer = torch.optim.Adam(model.parameters(), lr=m.lr, weight_decay=m.wd)
        # Patience and budget in optimizer steps: the protocol's epochs at GAGA's batch size (`step_batch`),
        # whatever the model's own batch; a full-batch model gets as many updates as GAGA (train.py). Configs
        # stored before step_batch existed count the model's own epochs, as they were run (make verify).
        # Explicit None checks: a 0 is a value (refused by shared.config_check), never "unset".
        step_batch = given(cfg.dataset.get("step_batch"), given(protocol.get("step_batch"), m.get("batch_size")))
        unit = steps_per_epoch(len(train_idx), step_batch)
        patience = given(cfg.scale.patience, given(cfg.dataset.get("patience"), protocol.patience))
        summary = fit(forward, model, data["y"], train_idx, val_idx, optimizer,
                      max_steps=protocol.max_epochs * unit, patience_steps=patience * unit,
                      batch_size=m.get("batch_size"), log=log, class_weight=weight,
                      max_epochs=cfg.scale.max_epochs)
        summary["split"] = seed if len(graph.splits) > 1 else "seed-717 40/10/50"
        if "grouping_seconds" in data:
            summary["grouping_seconds"] = data["grouping_seconds"]
        return summary

    def evaluate(self, cfg: DictConfig, model: torch.nn.Module, data: dict[str, Any]) -> dict[str, float]:
        forward, val_idx, test_idx = data["current"]
        y = data["y"].cpu().numpy()
        out = evaluate_split(y[val_idx.cpu().numpy()], predict(forward, model, val_idx),
                             y[test_idx.cpu().numpy()], predict(forward, model, test_idx))
        out.pop("threshold")
        return out

    def after_replicate(self, cfg: DictConfig) -> None:
        """Called by `python -m replications.replicate gaga`: results/gaga/<dataset>.md from the result files."""
        from replications.gaga.merge import table

        results = result_path(cfg).parents[2]
        write_text_atomic(results / "gaga" / f"{cfg.dataset.name}.md", table(cfg.dataset.name, results))


REPLICATION = GAGAReplication()
