"""ogbl-wikikg2 evaluation: rank each true triple against OGB's 500 given negatives with OGB's Evaluator."""

from __future__ import annotations

import torch

from replications.rep.data import KG
from replications.rep.models import KGE


def candidate_scores(model: KGE, entity: torch.Tensor, anchor: torch.Tensor, r: torch.Tensor,
                     candidates: torch.Tensor, direction: int) -> torch.Tensor:
    """Scores (B, C) of each query against its own candidate row."""
    q = model.context(entity, model.relation.detach(), anchor, r, direction)
    if model.kind in ("transe", "rotate"):
        return model.gamma - (q[:, None, :] - entity[candidates]).norm(dim=-1)
    return (q[:, None, :] * entity[candidates]).sum(-1)


def ogb_metrics(model: KGE, entity: torch.Tensor, kg: KG, split: str, batch_size: int = 256) -> dict[str, float]:
    triples, neg = getattr(kg, split), kg.candidates[split]
    lists: dict[str, list[torch.Tensor]] = {"mrr": [], "hits1": [], "hits3": [], "hits10": []}
    for start in range(0, len(triples), batch_size):
        tr = triples[start:start + batch_size].to(entity.device)
        for direction, key, anchor_col, target_col in ((1, "tail_neg", 0, 2), (-1, "head_neg", 2, 0)):
            cand = torch.cat([tr[:, target_col:target_col + 1], neg[key][start:start + batch_size].to(entity.device)], 1)
            s = candidate_scores(model, entity, tr[:, anchor_col], tr[:, 1], cand, direction)
            result = kg.evaluator.eval({"y_pred_pos": s[:, 0], "y_pred_neg": s[:, 1:]})
            for name, key in (("mrr", "mrr_list"), ("hits1", "hits@1_list"), ("hits3", "hits@3_list"),
                              ("hits10", "hits@10_list")):
                lists[name].append(torch.as_tensor(result[key]).float().cpu())
    return {name: float(torch.cat(v).mean()) for name, v in lists.items()}
