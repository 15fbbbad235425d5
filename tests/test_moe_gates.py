"""Each gate's semantics on hand-made inputs: choice, weights, capacity/dropping, balance loss."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.optimize import linear_sum_assignment

from replications.moe.auction import balanced_assignment
from replications.moe.gates import DTSGate, make_gate
from replications.moe.routing import balance_loss
from replications.moe.schedule import temperature


def gate_for(kind: str, logits: torch.Tensor, **kw):
    T, E = logits.shape
    gate = make_gate(kind, T, E, **kw)
    with torch.no_grad():
        gate.proj.weight.copy_(logits.t())
        if gate.proj.bias is not None:
            gate.proj.bias.zero_()
    return gate, torch.eye(T)


def test_switch_top1_weight_and_capacity_drop_in_token_order():
    logits = torch.tensor([[2.0, 0.0]] * 6 + [[0.0, 1.0]] * 2)  # 6 tokens want expert 0
    gate, x = gate_for("switch", logits, capacity_factor=1.0, jitter=0.0)  # capacity ceil(8/2 * 1) = 4
    r = gate(x)
    assert r.expert.squeeze(1).tolist() == [0] * 6 + [1] * 2
    assert r.keep.squeeze(1).tolist() == [True] * 4 + [False] * 2 + [True] * 2  # first come, first served
    torch.testing.assert_close(r.weight[0, 0], torch.softmax(torch.tensor([2.0, 0.0]), 0)[0])
    p = torch.softmax(logits, 1)
    m, c = p.mean(0), torch.tensor([6 / 8, 2 / 8])
    torch.testing.assert_close(r.aux, 2 * (m * c).sum())  # E * sum_e m_e c_e, counted before dropping
    assert r.stats["dropped_fraction"] == pytest.approx(2 / 8)


def test_gshard_top2_second_choices_queue_after_all_first_choices():
    logits = torch.tensor([[3.0, 1.0], [3.0, 1.0], [1.0, 3.0], [1.0, 3.0]])
    gate, x = gate_for("gshard", logits, capacity_factor=0.5)  # capacity 2 * ceil(4/2 * 0.5) = 2
    r = gate(x)
    assert r.expert.tolist() == [[0, 1], [0, 1], [1, 0], [1, 0]]  # E = 2: the sampled second is the other one
    # The 2 first choices of each expert fill it; every second choice is dropped.
    assert r.keep.tolist() == [[True, False]] * 4
    # fairseq top2gating: kept weights renormalised after dropping, so the lone first choice gets 1
    torch.testing.assert_close(r.weight, torch.tensor([[1.0, 0.0]] * 4))
    p = torch.softmax(logits, 1)
    # l_aux = E^2 * mean_e(m_e * c_e), c_e over first choices only: c = [2/4, 2/4]
    torch.testing.assert_close(r.aux, 4 * (p.mean(0) * torch.tensor([0.5, 0.5])).mean())
    gate.capacity_factor = None
    r = gate(x)
    assert r.keep.all()
    g1 = torch.sigmoid(torch.tensor(2.0))  # p1 / (p1 + p2) for logits 3 vs 1
    torch.testing.assert_close(r.weight, torch.stack([g1, 1 - g1]).expand(4, 2))


def test_gshard_at_balance_loss_is_one_hetu_variant_two():
    # Perfect balance (uniform probabilities, first choices spread evenly): GShard's loss is 1, while
    # Hetu's TopGate, counting both slots, gives k = 2 -- the factor the old code had.
    logits = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    gate, x = gate_for("gshard", logits * 1e-4, capacity_factor=None)
    assert float(gate(x).aux) == pytest.approx(1.0, abs=1e-3)
    hetu, _ = gate_for("gshard", logits * 1e-4, capacity_factor=None, variant="hetu")
    assert float(hetu(x).aux) == pytest.approx(2.0, abs=1e-3)


def test_gshard_hetu_variant_renormalises_before_dropping():
    logits = torch.tensor([[3.0, 1.0], [3.0, 1.0], [1.0, 3.0], [1.0, 3.0]])
    gate, x = gate_for("gshard", logits, capacity_factor=0.5, variant="hetu")
    r = gate(x)
    assert r.keep.tolist() == [[True, False]] * 4
    g1 = torch.sigmoid(torch.tensor(2.0))
    torch.testing.assert_close(r.weight[:, 0], g1.expand(4))  # the dropped second's share is lost
    p = torch.softmax(logits, 1)
    torch.testing.assert_close(r.aux, 2 * (p.mean(0) * torch.tensor([1.0, 1.0])).sum())


def test_gshard_second_expert_is_sampled_from_the_other_experts_softmax():
    # fairseq's 'sampling' policy (Gumbel-max over the logits without the first): P(second = e) is
    # softmax over the remaining logits. Logits [5, log 3, log 1, -20]: first is 0, then 3/4, 1/4, ~0.
    row = torch.tensor([5.0, math.log(3.0), 0.0, -20.0])
    gate, _ = gate_for("gshard", torch.eye(4), capacity_factor=None)
    gate.generator = torch.Generator().manual_seed(0)
    x = row.expand(20000, 4)  # proj = identity: logits = x
    r = gate(x)
    assert r.expert[:, 0].eq(0).all()
    freq = torch.bincount(r.expert[:, 1], minlength=4).float() / 20000
    assert freq[0] == 0 and float(freq[1]) == pytest.approx(0.75, abs=0.015)
    assert float(freq[2]) == pytest.approx(0.25, abs=0.015) and freq[3] < 1e-3


def test_gshard_random_routing_keeps_the_second_with_twice_its_share():
    # GShard / FastMoE random routing: keep the (deterministic) second with probability 2 * g2 / (g1 + g2).
    gate, _ = gate_for("gshard", torch.eye(2), capacity_factor=None, second_policy="random")
    gate.generator = torch.Generator().manual_seed(0)
    x = torch.tensor([math.log(0.8), math.log(0.2)]).expand(20000, 2)  # share of the second: 0.2
    r = gate(x)
    assert r.expert[:, 1].eq(1).all()
    assert float(r.keep[:, 1].float().mean()) == pytest.approx(0.4, abs=0.015)
    torch.testing.assert_close(r.weight[~r.keep[:, 1], 0], torch.ones(int((~r.keep[:, 1]).sum())))
    torch.testing.assert_close(r.weight[r.keep[:, 1]], torch.tensor([0.8, 0.2]).expand(int(r.keep[:, 1].sum()), 2))


def test_switch_jitter_multiplies_the_router_input_in_training_only():
    assert make_gate("switch", 4, 4).jitter == 0.01 and make_gate("gshard", 4, 4).jitter == 0.0
    gate, _ = gate_for("switch", torch.eye(2), capacity_factor=None, jitter=0.2)
    x = torch.tensor([[1.0, 0.95]]).expand(4000, 2)  # expert 0 by a margin the jitter can overturn
    gate.generator = torch.Generator().manual_seed(0)
    r = gate(x)
    u = torch.rand(4000, 2, generator=torch.Generator().manual_seed(0))
    z = x * (0.8 + 0.4 * u)  # x * U(1 - eps, 1 + eps)
    assert r.expert.squeeze(1).tolist() == z.argmax(1).tolist()
    torch.testing.assert_close(r.weight.squeeze(1), torch.softmax(z, 1).max(1).values)
    assert 0.1 < float(r.expert.float().mean()) < 0.5
    gate.eval()
    assert gate(x).expert.eq(0).all()  # no jitter in evaluation


def test_ktop1_one_expert_per_prototype_and_summed_losses():
    logits = torch.tensor([[2.0, 0.0, 0.0, 1.0], [0.0, 2.0, 3.0, 0.0]])
    gate, x = gate_for("ktop1", logits, k=2, capacity_factor=None)
    r = gate(x)
    assert r.expert.tolist() == [[0, 3], [1, 2]]
    torch.testing.assert_close(r.weight[0], torch.stack([torch.softmax(torch.tensor([2.0, 0.0]), 0)[0],
                                                         torch.softmax(torch.tensor([0.0, 1.0]), 0)[1]]))
    p1, p2 = torch.softmax(logits[:, :2], 1), torch.softmax(logits[:, 2:], 1)
    want = 2 * (p1.mean(0) * torch.tensor([0.5, 0.5])).sum() + 2 * (p2.mean(0) * torch.tensor([0.5, 0.5])).sum()
    torch.testing.assert_close(r.aux, want)


def test_sam_switches_to_the_heaviest_group_and_pays_the_alignment_loss():
    probs = torch.tensor([[0.40, 0.02, 0.30, 0.28]])  # group {0,1}: 0.42, group {2,3}: 0.58
    gate, x = gate_for("sam", probs.log(), group_size=2, k=1, capacity_factor=None)
    r = gate(x)
    assert r.expert.tolist() == [[2]]  # not the global argmax (expert 0)
    torch.testing.assert_close(r.weight, torch.tensor([[0.30]]))
    balance = balance_loss(probs, r.expert, torch.ones(1, 1, dtype=torch.bool), 4)
    torch.testing.assert_close(r.aux, balance + torch.tensor(0.40 - 0.30))  # only expert 0 outranks the pick


def test_base_assignment_is_exactly_balanced_and_near_optimal():
    g = torch.Generator().manual_seed(3)
    scores = torch.randn(64, 4, generator=g)
    owner = balanced_assignment(scores)
    assert torch.bincount(owner, minlength=4).tolist() == [16] * 4
    cost = np.repeat(scores.numpy(), 16, axis=1)  # each expert as 16 identical slots
    rows, cols = linear_sum_assignment(cost, maximize=True)
    best = cost[rows, cols].sum()
    eps = max(float(scores.max() - scores.min()) / 50, 1e-4)
    got = float(scores[torch.arange(64), owner].sum())
    assert best - 64 * eps <= got <= best + 1e-6
    with pytest.raises(ValueError, match="divisible"):
        balanced_assignment(torch.randn(10, 4))


def test_base_gate_alpha_mixing_and_greedy_eval():
    gate = make_gate("base", 8, 2)
    assert isinstance(gate.centroids, torch.nn.Parameter)  # fairseq: expert_centroids is a parameter
    x = torch.randn(16, 8)
    r = gate(x)
    assert torch.bincount(r.expert.squeeze(1), minlength=2).tolist() == [8, 8]
    alpha = torch.sigmoid((x * gate.centroids[r.expert.squeeze(1)]).sum(1))
    torch.testing.assert_close(r.weight.squeeze(1), alpha)
    torch.testing.assert_close(r.residual, torch.ones(16))  # alpha (x + f) + (1 - alpha) x = x + alpha f
    r.weight.sum().backward()
    assert gate.centroids.grad.abs().sum() > 0  # the centroids learn through alpha
    gate.eval()
    assert gate(x).expert.squeeze(1).tolist() == (x @ gate.centroids.t()).argmax(1).tolist()


def test_base_layer_is_identity_at_init_then_x_plus_alpha_ffn_of_its_own_layernorm():
    from replications.moe import MoELayer

    torch.manual_seed(0)
    layer = MoELayer(8, 12, make_gate("base", 8, 2))
    x = torch.randn(6, 8) * 3 + 1
    layer.eval()
    torch.testing.assert_close(layer(x)[0], x)  # second matrix zero (fairseq; its bias too, our choice): identity
    with torch.no_grad():
        for p in (layer.w2, layer.b2, layer.ln_w, layer.ln_b):
            p.normal_()
    e = (x @ layer.gate.centroids.t()).argmax(1)  # greedy in evaluation
    n = (x - x.mean(1, keepdim=True)) / torch.sqrt(x.var(1, unbiased=False, keepdim=True) + 1e-5)
    n = n * layer.ln_w[e] + layer.ln_b[e]
    f = torch.bmm(torch.nn.functional.gelu(torch.bmm(n.unsqueeze(1), layer.w1[e]) + layer.b1[e].unsqueeze(1)),
                  layer.w2[e]).squeeze(1) + layer.b2[e]
    alpha = torch.sigmoid((x * layer.gate.centroids[e]).sum(1, keepdim=True))
    torch.testing.assert_close(layer(x)[0], x + alpha * f, rtol=1e-5, atol=1e-5)


def test_hash_gate_is_a_fixed_balanced_table():
    gate = make_gate("hash", 4, 4, vocab_size=103, seed=5)
    assert sorted(torch.bincount(gate.table, minlength=4).tolist()) == [25, 26, 26, 26]
    ids = torch.tensor([7, 7, 99, 7])
    r = gate(torch.randn(4, 4), ids)
    assert r.expert[0] == r.expert[1] == r.expert[3] == gate.table[7]
    assert float(r.aux) == 0 and r.weight.eq(1).all()
    with pytest.raises(ValueError, match="token_ids"):
        gate(torch.randn(4, 4))


def expected_active(tau: float, E: int = 8, T: int = 4000) -> float:
    gate = DTSGate(4, E)
    with torch.no_grad():
        gate.proj.weight.normal_(0, 0.5, generator=torch.Generator().manual_seed(0))
    gate.generator = torch.Generator().manual_seed(1)
    gate.temperature = tau
    x = torch.randn(T, 4, generator=torch.Generator().manual_seed(2))
    return float(gate(x).keep.sum()) / T


def test_dts_active_experts_go_from_all_to_one_as_temperature_falls():
    taus = [8.0, 2.0, 1.0, 0.5, 0.2, 0.1, 0.03, 0.003]
    active = [expected_active(t) for t in taus]
    assert active[0] > 7.9 and active[-1] < 1.05
    assert all(a >= b for a, b in zip(active, active[1:]))


def test_dts_threshold_weights_hard_eval_and_loss():
    gate = DTSGate(3, 3)
    x = torch.randn(5, 3)
    gate.temperature = 1e6  # g ~ uniform 1/3 > 0.001: every expert selected
    r = gate(x)
    assert r.keep.all()
    probs = torch.softmax(gate.proj(x), 1)
    torch.testing.assert_close(r.weight, probs)  # use_gumbel_gates=False: softmax(z) on the selected
    torch.testing.assert_close(r.aux, 9 * (probs.mean(0) * 1.0).mean())  # E^2 mean(m c), c_e = 1
    gate.threshold = 1.0  # nothing passes g > 1
    assert not gate(x).keep.any()
    gate.threshold, gate.mode = 0.001, "hard"
    assert gate(x).expert.shape == (5, 1)
    gate.temperature = 0.0  # tau <= 0: dense softmax mixture, no aux
    gate.mode = "soft"
    r = gate(x)
    assert r.keep.all() and float(r.aux) == 0
    gate.temperature, gate.mode = 1.0, "soft"
    gate.eval()
    r = gate(x)
    assert r.expert.squeeze(1).tolist() == probs.argmax(1).tolist()
    gate.train()
    gate.mode = "single"
    assert gate(x).expert.eq(0).all()


def test_temperature_schedules():
    assert temperature(0, "exponential", 2.0, 0.5, 100) == pytest.approx(2.0)
    assert temperature(50, "exponential", 2.0, 0.5, 100) == pytest.approx(1.0)  # geometric midpoint
    assert temperature(100, "exponential", 2.0, 0.5, 100) == pytest.approx(0.5)
    assert temperature(500, "exponential", 2.0, 0.5, 100) == pytest.approx(0.5)
    assert temperature(50, "linear", 2.0, 0.5, 100) == pytest.approx(1.25)
    assert temperature(1000, "linear", 2.0, 0.5, 100) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="schedule"):
        temperature(0, "cosine", 2.0, 0.5, 100)
    with pytest.raises(ValueError):
        temperature(0, "linear", 0.1, 0.5, 100)


# The topology gates (TA-MoE, FasterMoE): tests/test_ta_moe_gates.py


def test_unknown_gate_and_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="valid"):
        make_gate("expert-choice", 4, 4)
    with pytest.raises(ValueError, match="divisible"):
        make_gate("ktop1", 4, 6, k=4)
    with pytest.raises(ValueError, match="group_size"):
        make_gate("sam", 4, 6, group_size=4)
