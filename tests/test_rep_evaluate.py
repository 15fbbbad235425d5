"""The vectorised filtered evaluator against a brute-force one, on a small random KG with planted ties."""

from __future__ import annotations

import torch

from replications.rep.evaluate import filter_pairs, filtered_metrics, ranks, summarize


def brute_rank(table: torch.Tensor, known: set[tuple[int, int, int]], triple: tuple[int, int, int],
               direction: int) -> float:
    """Rank of the true answer among all entities, skipping other known true triples, ties halved."""
    h, r, t = triple
    anchor, target = (h, t) if direction == 1 else (t, h)
    true_score = table[anchor, r, target].item()
    better = equal = 0
    for e in range(table.shape[2]):
        candidate = (h, r, e) if direction == 1 else (e, r, t)
        if e == target or candidate in known:
            continue
        s = table[anchor, r, e].item()
        better += s > true_score
        equal += s == true_score
    return 1.0 + better + 0.5 * equal


def random_kg(seed: int, n_ent: int = 12, n_rel: int = 3, n_triples: int = 80):
    g = torch.Generator().manual_seed(seed)
    triples = torch.unique(torch.stack([torch.randint(n_ent, (n_triples,), generator=g),
                                        torch.randint(n_rel, (n_triples,), generator=g),
                                        torch.randint(n_ent, (n_triples,), generator=g)], 1), dim=0)
    triples = triples[torch.randperm(len(triples), generator=g)]
    # integer scores in a small range: many ties, including with the true answer
    tail_table = torch.randint(0, 4, (n_ent, n_rel, n_ent), generator=g).float()
    head_table = torch.randint(0, 4, (n_ent, n_rel, n_ent), generator=g).float()
    return triples, tail_table, head_table


def test_vectorised_matches_brute_force_with_ties() -> None:
    for seed in range(5):
        triples, tail_table, head_table = random_kg(seed)
        queries, known = triples[:20], triples
        known_set = {tuple(x) for x in known.tolist()}

        def score_fn(anchor, r, direction, tail_table=tail_table, head_table=head_table):
            return (tail_table if direction == 1 else head_table)[anchor, r]

        for direction, table in ((1, tail_table), (-1, head_table)):
            fast = ranks(score_fn, queries, known, direction, batch_size=7)  # batches split the filter
            slow = [brute_rank(table, known_set, tuple(q), direction) for q in queries.tolist()]
            assert fast.tolist() == slow
        ties = sum(brute_rank(tail_table, known_set, tuple(q), 1) % 1 != 0 for q in queries.tolist())
        assert ties > 0 or seed > 0  # the planted integer scores do produce half ranks


def test_filter_pairs_lists_all_known_answers() -> None:
    known = torch.tensor([[0, 0, 1], [0, 0, 2], [0, 1, 3], [4, 0, 1]])
    row_ptr, ents = filter_pairs(torch.tensor([[0, 0, 1], [4, 0, 1]]), known, 1)
    assert row_ptr.tolist() == [0, 2, 3]
    assert sorted(ents[:2].tolist()) == [1, 2] and ents[2:].tolist() == [1]
    row_ptr, ents = filter_pairs(torch.tensor([[0, 0, 1]]), known, -1)  # heads of (?, 0, 1)
    assert sorted(ents.tolist()) == [0, 4]


def test_hand_computed_metrics() -> None:
    # 3 entities, 1 relation; only (0, 0, 1) is true. Tail scores from 0: [5, 9, 9] -> entity 2 ties the
    # answer: rank 1.5. Head scores for tail 1: [1, 0, 3] -> entity 2 beats answer 0: rank 2.
    scores = {1: torch.tensor([[5.0, 9.0, 9.0]]), -1: torch.tensor([[1.0, 0.0, 3.0]])}
    metrics = filtered_metrics(lambda a, r, d: scores[d].clone(), torch.tensor([[0, 0, 1]]), torch.tensor([[0, 0, 1]]))
    assert metrics["mr"] == 1.75
    assert abs(metrics["mrr"] - (1 / 1.5 + 1 / 2) / 2) < 1e-12
    assert metrics["hits1"] == 0.0 and metrics["hits3"] == 1.0


def test_filtering_removes_other_true_answers() -> None:
    # (0, 0, 2) is also true, so entity 2 (scored above the answer) must not count.
    known = torch.tensor([[0, 0, 1], [0, 0, 2]])
    scores = torch.tensor([[0.0, 5.0, 9.0]])
    r = ranks(lambda a, rel, d: scores.clone(), torch.tensor([[0, 0, 1]]), known, 1)
    assert r.tolist() == [1.0]


def test_nan_scores_raise() -> None:
    import pytest

    with pytest.raises(ValueError, match="NaN"):
        ranks(lambda a, r, d: torch.full((1, 3), float("nan")), torch.tensor([[0, 0, 1]]), torch.tensor([[0, 0, 1]]), 1)
    with pytest.raises(ValueError, match="no query"):
        ranks(lambda a, r, d: torch.zeros(0, 3), torch.zeros(0, 3, dtype=torch.long), torch.tensor([[0, 0, 1]]), 1)
    with pytest.raises(ValueError, match="non-finite"):
        summarize(torch.tensor([float("inf")]))


class StubOGBEvaluator:
    """OGB's link-prediction ranking rule (ogb.linkproppred.Evaluator, 'mrr' branch), for offline tests."""

    def eval(self, d):
        pos, neg = d["y_pred_pos"].view(-1, 1), d["y_pred_neg"]
        rank = 0.5 * ((neg > pos).sum(1) + (neg >= pos).sum(1)) + 1
        return {"mrr_list": 1.0 / rank, **{f"hits@{k}_list": (rank <= k).float() for k in (1, 3, 10)}}


def test_wikikg2_candidate_ranking_with_stub_evaluator() -> None:
    from replications.rep.data import KG
    from replications.rep.models import KGE
    from replications.rep.ogb import ogb_metrics

    model = KGE("distmult", 4, 1, 1, 1.0)
    with torch.no_grad():
        model.entity.copy_(torch.tensor([[1.0], [2.0], [3.0], [-1.0]]))
        model.relation.copy_(torch.tensor([[1.0]]))
    triple = torch.tensor([[0, 0, 1]])  # tail query scores e: 1 * e; head query scores e: 2 * e
    kg = KG("ogbl_wikikg2", 4, 1, triple, triple, triple, evaluator=StubOGBEvaluator())
    kg.candidates["test"] = {"tail_neg": torch.tensor([[2, 3]]), "head_neg": torch.tensor([[3, 3]])}
    metrics = ogb_metrics(model, model.entity.detach(), kg, "test")
    # tail: true 1 (score 2) vs 2 (3) and 3 (-1) -> rank 2; head: true 0 (2) vs 3, 3 (-2) -> rank 1
    assert metrics["mrr"] == (0.5 + 1.0) / 2 and metrics["hits1"] == 0.5
