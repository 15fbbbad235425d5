"""PSHGCN (He et al., WWW 2024) and RGCN/HGT baselines under the official HGB protocol.

build_model draws the seed's validation split before the model's weights (the official RNG order) and returns
both as one ``Seeded`` (the network and its split), so train and evaluate score the split it was built with and
nothing of a seed is kept on this module's objects. report() renders the speed benchmark (benchmark.json, from
``python -m replications.pshgcn.bench --out DIR``) with the protocol's times (replications/pshgcn/report.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from replications.pshgcn import data as pdata
from replications.pshgcn.baselines import HGT, RGCN, RSAGE
from replications.pshgcn.graph import relation_matrices
from replications.pshgcn.model import PSHGCN
from replications.pshgcn.train import Split, fit, param_groups, scores, split_for_seed
from shared.config_check import given
from shared.replication import LogFn, Replication, Run
from shared.report.paper_hook import PaperReport, PaperResults


def is_pshgcn(model_cfg: DictConfig) -> bool:
    """The paper's model, or a labelled variant of it (``family: pshgcn``, e.g. pshgcn_stable)."""
    return model_cfg.get("family", model_cfg.name) == "pshgcn"


@dataclass(frozen=True)
class Seeded:
    """What build_model returns for one seed: the fresh network and the validation split drawn just before it."""

    net: torch.nn.Module
    split: Split


class PSHGCNReplication(Replication):
    name = "pshgcn"
    paper_file = Path(__file__).with_name("paper.yaml")

    def load_data(self, run: Run) -> dict[str, Any]:
        graph, device = pdata.load(run.cfg), run.device
        adjs = relation_matrices(graph, run.cfg.model) if is_pshgcn(run.cfg.model) else {}
        return {"graph": graph, "adjs": {k: (a.to(device), a_t.to(device)) for k, (a, a_t) in adjs.items()},
                "x": pdata.features(graph, device)}

    def build_model(self, run: Run, data: dict[str, Any]) -> Seeded:
        g, m = data["graph"], run.cfg.model
        # The official main.py draws the seed's validation split (numpy) before it builds the model (torch init,
        # then theta from numpy): the same order here makes our seed s the official seed s.
        target = g[g.target_type]
        split = split_for_seed(target.train_mask, target.test_mask, run.cfg.paper.protocol.val_ratio)
        return Seeded(self._network(m, g).to(run.device), split)

    def _network(self, m: DictConfig, g: Any) -> torch.nn.Module:
        if is_pshgcn(m):
            letters = {k: str(v) for k, v in m.node_letters.items()}
            model = PSHGCN(
                in_dims={t: (g[t].x.shape[1] if "x" in g[t] else None) for t in g.node_types},
                num_nodes={t: g[t].num_nodes for t in g.node_types}, num_classes=g.num_classes,
                relations=list(m.relations), order=m.K, letters=letters, target=g.target_type,
                emb_dim=m.emb_dim, hidden=m.hidden, input_drop=m.input_drop, dropout=m.dropout)
        elif m.name == "rgcn":
            model = RGCN(g, m.hidden, m.layers, m.dropout, m.get("num_bases"))
        elif m.name == "rsage":
            model = RSAGE(g, m.hidden, m.layers, m.dropout)
        elif m.name == "hgt":
            model = HGT(g, m.hidden, m.layers, m.heads, m.dropout)
        else:
            raise ValueError(f"unknown model '{m.name}' for pshgcn; valid: pshgcn, rgcn, rsage, hgt")
        return model

    def train(self, run: Run, model: Seeded, data: dict[str, Any], seed: int, log: LogFn) -> dict:
        cfg = run.cfg
        g, m, protocol = data["graph"], cfg.model, cfg.paper.protocol
        target = g[g.target_type]  # model.split: drawn in build_model; evaluate scores the same split
        optimizer = torch.optim.AdamW(param_groups(model.net, m.lr, m.wd, m.get("prop_lr"), m.get("prop_wd")))
        return fit(model.net, (data["x"], data["adjs"]), target.y.to(run.device), model.split, g.multilabel, optimizer,
                   max_epochs=given(cfg.scale.max_epochs, protocol.max_epochs),
                   patience=given(cfg.scale.patience, protocol.patience),
                   # The epoch-0-only dropout is a quirk of PSHGCN's released loop, matched for PSHGCN; the
                   # baselines train as they are published, with dropout in every step (without it RGCN on
                   # AMiner overfits within 5-10 steps and early stopping keeps a constant predictor).
                   dropout_first_epoch_only=protocol.dropout_first_epoch_only and is_pshgcn(m), log=log)

    def evaluate(self, run: Run, model: Seeded, data: dict[str, Any], seed: int,
                 summary: dict[str, Any]) -> dict[str, float]:
        g, split = data["graph"], model.split
        y = g[g.target_type].y
        model.net.eval()
        with torch.no_grad():
            logits = model.net(data["x"], data["adjs"]).cpu()
        out = {f"val_{k}": v for k, v in scores(logits[split.val], y[split.val], g.multilabel).items()}
        out |= {f"test_{k}": v for k, v in scores(logits[split.test], y[split.test], g.multilabel).items()}
        return out

    def report(self, results: PaperResults) -> PaperReport | None:
        from replications.pshgcn import report

        return report.build(results)


REPLICATION = PSHGCNReplication()
