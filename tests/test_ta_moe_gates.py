"""TA-MoE's topology-aware gate and FasterMoE's topology gate against hand-computed cases of the official
code's rules (TA-MoE gshard_gate.py + moe_layer.py + limit_by_capacity at b3aff03; FasterMoE hir_gate.py)."""

from __future__ import annotations

import math

import pytest
import torch

from replications.moe import make_gate


def gate_for(kind: str, logits: torch.Tensor, **kw):
    T, E = logits.shape
    gate = make_gate(kind, T, E, **kw)
    with torch.no_grad():
        gate.proj.weight.copy_(logits.t())
        gate.proj.bias.zero_()
    return gate, torch.eye(T)


def softmax(row: list[float]) -> list[float]:
    z = [math.exp(v) for v in row]
    return [v / sum(z) for v in z]


# Two emulated ranks (E = 4, E_loc = 2), two tokens each: every expert gets one of each rank's 4 selections.
TA_LOGITS = [[3.0, 2.0, 0.0, 0.0], [0.0, 0.0, 3.0, 2.0],  # rank 0: top-2 {0, 1}, {2, 3}
             [3.0, 0.0, 2.0, 0.0], [0.0, 3.0, 0.0, 2.0]]  # rank 1: top-2 {0, 2}, {1, 3}


def ta_loss_by_hand(topology: list[list[float]] | None) -> float:
    """Per rank r: c_e = (top-2 hits)/S = 1/2 for every e, m_e = mean softmax, s = softmax(T[r]) * W^2 per
    destination rank repeated E_loc times; L_r = E_loc^2 * mean_e(c_e s_e m_e); the ranks' losses averaged."""
    W, E, e_loc = 2, 4, 2
    losses = []
    for r in range(W):
        rows = TA_LOGITS[2 * r:2 * r + 2]
        m = [sum(softmax(row)[e] for row in rows) / 2 for e in range(E)]
        s = [1.0] * W if topology is None else [v * W * W for v in softmax(topology[r])]
        losses.append(e_loc ** 2 * sum(0.5 * s[e // e_loc] * m[e] for e in range(E)) / E)
    return sum(losses) / W


def test_ta_loss_matches_the_official_rules_by_hand():
    topo = [[0.0, math.log(3.0)], [math.log(3.0), 0.0]]  # s = [1, 3] from rank 0, [3, 1] from rank 1
    gate, x = gate_for("topology", torch.tensor(TA_LOGITS), topology=torch.tensor(topo), world_size=2)
    r = gate(x)
    assert float(r.aux.detach()) == pytest.approx(ta_loss_by_hand(topo), rel=1e-6)
    plain, _ = gate_for("topology", torch.tensor(TA_LOGITS), world_size=2)
    assert float(plain(x).aux.detach()) == pytest.approx(ta_loss_by_hand(None), rel=1e-6)
    assert ta_loss_by_hand(topo) > ta_loss_by_hand(None)  # the costly link is penalised
    # combine weights are the raw top-k logits (moe_layer.py multiplies by them, no softmax)
    torch.testing.assert_close(r.weight, torch.tensor(TA_LOGITS).topk(2).values)
    assert r.keep.all()  # capacity ceil(1.2 * 2) = 3 per expert: nothing dropped
    assert gate.last_dispatch.tolist() == [[2, 2], [2, 2]]


def test_ta_loss_gradient_pushes_away_from_the_costly_rank():
    """Both ranks hold the same two tokens (as distinct rows); the topology makes rank 1's experts costly
    for rank 0 and rank 0's for rank 1: descent lowers each rank's tokens' logits of its far experts more
    than the plain loss does."""
    logits = torch.tensor(TA_LOGITS[:2] * 2)

    def far_minus_near(topology):
        gate, x = gate_for("topology", logits, topology=topology, world_size=2)
        gate(x).aux.backward()
        g = gate.proj.weight.grad  # [E, T]: d loss / d logit of expert e for token t (x is one-hot)
        return float(g[2:, :2].sum() - g[:2, :2].sum()), float(g[:2, 2:].sum() - g[2:, 2:].sum())

    ta = far_minus_near(torch.tensor([[0.0, 2.0], [2.0, 0.0]]))
    plain = far_minus_near(None)
    assert ta[0] > plain[0] and ta[1] > plain[1]


def test_ta_capacity_is_receiving_side_rank_order_token_major():
    """cap = ceil(rate * S) per expert over all source ranks, rank 0 first; within a rank (token, slot)
    token-major: token 0's second choice comes before token 1's first choice."""
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0], [1.0, 2.0, 0.0, -1.0],  # rank 0: (0,1), (1,0)
                           [2.0, 0.0, 1.0, -1.0], [0.0, 0.0, 1.0, 2.0]])  # rank 1: (0,2), (3,2)
    gate, x = gate_for("topology", logits, world_size=2, capacity_rate=(0.5, 0.5))  # cap ceil(0.5 * 2) = 1
    r = gate(x)
    assert r.expert.tolist() == [[0, 1], [1, 0], [0, 2], [3, 2]]
    # e0: rank 0 token 0 first; e1: token 0's 2nd slot before token 1's 1st; rank 1 e0 full; e2 once; e3 free
    assert r.keep.tolist() == [[True, True], [False, False], [False, True], [True, False]]
    assert gate.last_dispatch.tolist() == [[2, 0], [0, 2]]  # experts 0-1 on rank 0, 2-3 on rank 1


def test_ta_gate_refuses_a_topology_of_the_wrong_size():
    gate, x = gate_for("topology", torch.tensor(TA_LOGITS), topology=torch.zeros(3, 3), world_size=2)
    with pytest.raises(ValueError, match="2x2"):
        gate(x)
    gate, x = gate_for("topology", torch.tensor(TA_LOGITS[:3]), world_size=2)
    with pytest.raises(ValueError, match="equal batches"):
        gate(x)


# FasterMoE: 4 emulated ranks, 2 per node (node 0: experts 0, 1; node 1: experts 2, 3), 4 tokens each.
FM_TOKENS = [[5.0, 4.0, 0.0, 0.0],  # top-1 e0
             [0.0, 1.0, 6.0, 0.0],  # top-1 e2
             [0.0, 2.0, 0.0, 4.0],  # top-1 e3
             [1.0, 0.0, 0.0, 7.0]]  # top-1 e3


def test_fastermoe_gate_keeps_only_a_fraction_of_off_node_tokens():
    gate, _ = gate_for("fastermoe_topology", torch.tensor(FM_TOKENS), world_size=4, ranks_per_node=2,
                       off_node_ratio=0.5)
    x = torch.eye(4).repeat(4, 1)  # every rank routes the same 4 tokens
    r = gate(x)
    # rank 0 (node 0): 3 of 4 top-1s leave the node >= int(4 * 0.5) = 2, so all tokens go top-2 over
    # experts {0, 1}, except the 2 off-node tokens with the highest top-1 logits (7: token 3, 6: token 1),
    # which keep that off-node expert as their second choice
    assert r.expert[:4].tolist() == [[0, 1], [1, 2], [1, 0], [0, 3]]
    # rank 2 (node 1): only token 0 leaves (1 < 2): plain top-2
    assert r.expert[8:12].tolist() == [[0, 1], [2, 1], [3, 1], [3, 0]]
    # weights: softmax over the two chosen logits
    torch.testing.assert_close(r.weight[5], torch.tensor(softmax([1.0, 6.0])))
    torch.testing.assert_close(r.weight[8], torch.tensor(softmax([5.0, 4.0])))
    assert gate.last_dispatch[0].tolist() == [3, 3, 1, 1]  # rank 0: only 2 assignments leave its node
    assert r.keep.all()  # no capacity in this gate
    # loss: GShard over the unrestricted top-1 choices, E_loc^2 * mean_e(c_e m_e), same for every rank here
    c = [0.25, 0.0, 0.25, 0.5]
    m = [sum(softmax(t)[e] for t in FM_TOKENS) / 4 for e in range(4)]
    assert float(r.aux.detach()) == pytest.approx(sum(ci * mi for ci, mi in zip(c, m)) / 4, rel=1e-6)


def test_fastermoe_gate_rejects_a_node_that_does_not_divide_the_world():
    gate, x = gate_for("fastermoe_topology", torch.tensor(FM_TOKENS), world_size=4, ranks_per_node=3)
    with pytest.raises(ValueError, match="ranks_per_node"):
        gate(x)


def test_rank_local_routers_learn_the_ladder_a_shared_router_cannot():
    """On the TA loss alone, each emulated rank's own router (official --gate_reduce_freq) learns to keep
    tokens on its node; one router shared by all ranks sees the same tokens with mirrored costs and cannot."""
    from replications.ta_moe.topology import bandwidth_matrix, topology_from_bandwidth

    topo = torch.tensor(topology_from_bandwidth(bandwidth_matrix(2, 2, 8000, 400)))

    def off_node_share(topology, local: bool) -> float:
        torch.manual_seed(0)
        gate = make_gate("topology", 8, 4, topology=topology, world_size=4, local_routers=local)
        opt = torch.optim.Adam(gate.parameters(), lr=0.05)
        for _ in range(60):
            opt.zero_grad()
            gate(torch.randn(64, 8)).aux.backward()
            opt.step()
        gate(torch.randn(256, 8))
        d = gate.last_dispatch.float()  # [source rank, destination rank]; node = rank // 2
        return float((d[:2, 2:].sum() + d[2:, :2].sum()) / d.sum())

    assert off_node_share(topo, local=True) < 0.2
    assert 0.35 < off_node_share(topo, local=False) < 0.65
    assert 0.35 < off_node_share(None, local=True) < 0.65


def test_average_routers_makes_the_copies_equal_again():
    torch.manual_seed(0)
    gate = make_gate("topology", 8, 4, world_size=2, local_routers=True)
    assert torch.equal(gate.routers[0].weight, gate.routers[1].weight)  # the same init on every rank
    with torch.no_grad():
        gate.routers[1].weight.add_(1.0)
    gate.average_routers()
    torch.testing.assert_close(gate.routers[0].weight, gate.routers[1].weight)
    assert all(getattr(p, "rank_local", False) for p in gate.parameters())
