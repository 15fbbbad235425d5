"""GAGA (Wang et al., WWW 2023) and MLP / GraphSAGE / BWGNN baselines under GAGA's official protocol.

report() returns the per-dataset table and the preprocessing benchmark as data (replications/gaga/report.py).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from replications.gaga import data as gdata
from replications.gaga.baselines import BWGNN, MLP, GraphSAGE, normalized_adjacency
from replications.gaga.grouping import group_ids, group_sequences
from replications.gaga.metrics import evaluate_split
from replications.gaga.model import GAGA
from replications.gaga.train import fit, predict, steps_per_epoch
from shared.config_check import ConfigError, given
from shared.replication import LogFn, Replication, Run
from shared.report.paper_hook import PaperReport, PaperResults

MODELS = ("gaga", "mlp", "graphsage", "bwgnn")


def union_edge_index(graph: gdata.FraudGraph) -> torch.Tensor:
    """Homogeneous view for the GNN baselines: the union of all relations (what dgl.to_homogeneous +
    to_simple gives BWGNN's homo mode), both directions, no self-loops."""
    union = sum(graph.relations.values(), sp.csr_matrix(next(iter(graph.relations.values())).shape, dtype=np.float32))
    coo = (union > 0).tocoo()
    return torch.from_numpy(np.vstack([coo.row, coo.col]).astype(np.int64))


def check_seeds(graph: gdata.FraudGraph, seeds: tuple[int, ...]) -> None:
    """On a dataset with several official splits (Tolokers: seed s = split s), every seed must name one."""
    if len(graph.splits) > 1 and not all(0 <= s < len(graph.splits) for s in seeds):
        bad = [s for s in seeds if not 0 <= s < len(graph.splits)]
        raise ConfigError(f"{graph.name} has {len(graph.splits)} official splits, seeds 0-{len(graph.splits) - 1}; "
                          f"seed(s) {bad} name none: give scale.seeds within 0-{len(graph.splits) - 1}")


class GAGAReplication(Replication):
    name = "gaga"
    paper_file = Path(__file__).with_name("paper.yaml")

    def load_data(self, run: Run) -> dict[str, Any]:
        d = run.cfg.dataset
        graph = gdata.load(d.name, normalize=d.get("row_normalize", True))
        check_seeds(graph, run.seeds)  # before any seed trains: a seed past the official splits failed mid-protocol
        return self.prepare(run, graph)

    def prepare(self, run: Run, graph: gdata.FraudGraph) -> dict[str, Any]:
        """Tensors for run.cfg.model from any FraudGraph (also the synthetic ones of the tests). ``sequences``
        is a cache of derived data (the group sequences of one split), never a seed's state."""
        device, name = run.device, run.cfg.model.name
        out: dict[str, Any] = {"graph": graph, "x": torch.from_numpy(graph.x).to(device),
                               "y": torch.from_numpy(graph.y).to(device), "sequences": {}}
        n = graph.x.shape[0]
        if name == "graphsage":
            ei = union_edge_index(graph)
            out["adj"] = torch.sparse_coo_tensor(ei.flip(0), torch.ones(ei.shape[1]), (n, n)).coalesce() \
                .to_sparse_csr().to(device)
        elif name == "bwgnn":
            out["adj"] = normalized_adjacency(union_edge_index(graph), n).to(device)
        return out

    def _sequences(self, run: Run, data: dict[str, Any], seed: int) -> tuple[torch.Tensor, float]:
        """Group sequences for this seed's split and the seconds their computation took (cached: one
        computation per distinct split, so seeds sharing YelpChi's one split reuse it)."""
        graph, m = data["graph"], run.cfg.model
        train_idx, _, _ = graph.split(seed)
        key = hash(train_idx.tobytes())
        if key not in data["sequences"]:
            t0 = time.perf_counter()
            seq = group_sequences(list(graph.relations.values()), graph.x, group_ids(graph.y, train_idx),
                                  hops=m.hops, block=m.block, workers=m.workers)
            # keep one split in memory
            data["sequences"] = {key: (torch.from_numpy(seq).to(run.device), round(time.perf_counter() - t0, 2))}
        return data["sequences"][key]

    def build_model(self, run: Run, data: dict[str, Any]) -> torch.nn.Module:
        m, graph = run.cfg.model, data["graph"]
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
        return model.to(run.device)

    def _forward(self, run: Run, model: torch.nn.Module, data: dict[str, Any], seed: int):
        name = run.cfg.model.name
        if name == "gaga":
            seq, _ = self._sequences(run, data, seed)
            return lambda idx: model(seq[idx])
        if name == "mlp":
            return lambda idx: model(data["x"][idx])
        return lambda idx: model(data["x"], data["adj"])[idx]  # full-batch GNN

    def train(self, run: Run, model: torch.nn.Module, data: dict[str, Any], seed: int, log: LogFn) -> dict:
        cfg = run.cfg
        m, protocol, graph = cfg.model, cfg.paper.protocol, data["graph"]
        train_idx, val_idx = (torch.from_numpy(a).to(run.device) for a in graph.split(seed)[:2])
        forward = self._forward(run, model, data, seed)
        weight = None
        if m.get("class_weighted_loss"):  # BWGNN: weight of class 1 = #neg / #pos among train nodes
            y_tr = data["y"][train_idx].float()
            weight = torch.tensor([1.0, float((1 - y_tr).sum() / y_tr.sum())], device=run.device)
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
        if m.name == "gaga":
            summary["grouping_seconds"] = self._sequences(run, data, seed)[1]
        return summary

    def evaluate(self, run: Run, model: torch.nn.Module, data: dict[str, Any], seed: int,
                 summary: dict[str, Any]) -> dict[str, float]:
        """Scores this seed's split (graph.split(seed), the one train used) with the trained model."""
        _, val_idx, test_idx = (torch.from_numpy(a).to(run.device) for a in data["graph"].split(seed))
        forward = self._forward(run, model, data, seed)
        y = data["y"].cpu().numpy()
        out = evaluate_split(y[val_idx.cpu().numpy()], predict(forward, model, val_idx),
                             y[test_idx.cpu().numpy()], predict(forward, model, test_idx))
        out.pop("threshold")
        return out

    def report(self, results: PaperResults) -> PaperReport | None:
        from replications.gaga import report

        return report.build(results)


REPLICATION = GAGAReplication()
