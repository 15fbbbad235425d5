"""The MoE layer: grouped expert matmuls equal a per-expert loop; dropped tokens get zero output;
weights, residuals and bad configurations behave as specified."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from replications.moe import MoELayer, make_gate
from replications.moe.layer import grouped_ffn


def loop_reference(layer: MoELayer, x: torch.Tensor, ids=None) -> torch.Tensor:
    """The obvious per-token, per-expert computation."""
    r = layer.gate(x, ids)
    y = torch.zeros_like(x)
    for t in range(x.shape[0]):
        for s in range(r.expert.shape[1]):
            if r.keep[t, s]:
                e = int(r.expert[t, s])
                u = x[t]
                if layer.residual_branch:  # BASE: the expert's own LayerNorm first
                    u = (u - u.mean()) / torch.sqrt(u.var(unbiased=False) + 1e-5) * layer.ln_w[e] + layer.ln_b[e]
                h = F.gelu(u @ layer.w1[e] + layer.b1[e]) @ layer.w2[e] + layer.b2[e]
                y[t] += r.weight[t, s] * h
        if r.residual is not None:
            y[t] += r.residual[t] * x[t]
    return y


@pytest.mark.parametrize("kind,kw", [("switch", {"capacity_factor": 0.5}), ("gshard", {}), ("ktop1", {"k": 2}),
                                     ("sam", {"group_size": 2}), ("base", {}), ("hash", {"vocab_size": 30}),
                                     ("dts", {}), ("topology", {"world_size": 1}),
                                     ("topology", {"world_size": 2, "capacity_rate": (0.3, 0.6)}),
                                     ("fastermoe_topology", {"world_size": 4, "ranks_per_node": 2})])
def test_layer_matches_a_per_token_loop(kind, kw):
    torch.manual_seed(0)
    layer = MoELayer(6, 10, make_gate(kind, 6, 4, **kw))
    with torch.no_grad():
        for p in (layer.b1, layer.b2, layer.w2) + ((layer.ln_w, layer.ln_b) if kind == "base" else ()):
            p.normal_()  # BASE's second matrix starts at zero: randomise it so the check means something
    x, ids = torch.randn(20, 6), torch.randint(0, 30, (20,))
    noisy = hasattr(layer.gate, "generator")  # switch jitter, gshard sampling, DTS Gumbel noise
    if noisy:
        layer.gate.generator = torch.Generator().manual_seed(1)
    y, _ = layer(x, ids)
    if noisy:
        layer.gate.generator = torch.Generator().manual_seed(1)  # the same noise for the reference
    torch.testing.assert_close(y, loop_reference(layer, x, ids), rtol=1e-5, atol=1e-5)


def test_dropped_tokens_pass_zero_and_gradients_flow():
    torch.manual_seed(0)
    gate = make_gate("switch", 4, 2, capacity_factor=0.5)
    layer = MoELayer(4, 8, gate)
    with torch.no_grad():
        gate.proj.weight.zero_()
        gate.proj.bias.copy_(torch.tensor([1.0, 0.0]))  # every token prefers expert 0
    x = torch.randn(8, 4, requires_grad=True)
    y, aux = layer(x)
    assert layer.last_stats["expert_load"] == [2, 0]  # capacity ceil(8/2 * 0.5) = 2
    assert y[2:].abs().sum() == 0 and y[:2].abs().sum() > 0
    (y.sum() + aux).backward()
    assert layer.w1.grad[0].abs().sum() > 0 and layer.w1.grad[1].abs().sum() == 0
    assert gate.proj.weight.grad.abs().sum() > 0


def test_grouped_ffn_handles_empty_experts_and_no_tokens():
    w1, b1, w2, b2 = torch.randn(3, 4, 5), torch.randn(3, 5), torch.randn(3, 5, 4), torch.randn(3, 4)
    h = torch.randn(4, 4)
    out = grouped_ffn(h, torch.tensor([0, 4, 0]), w1, b1, w2, b2)
    torch.testing.assert_close(out, F.gelu(h @ w1[1] + b1[1]) @ w2[1] + b2[1])
    assert grouped_ffn(h[:0], torch.tensor([0, 0, 0]), w1, b1, w2, b2).shape == (0, 4)


def test_same_seed_same_output_and_clear_errors():
    torch.manual_seed(3)
    a = MoELayer(4, 8, make_gate("switch", 4, 4))
    torch.manual_seed(3)
    b = MoELayer(4, 8, make_gate("switch", 4, 4))
    x = torch.randn(5, 4)
    torch.manual_seed(4)  # the same router jitter noise too
    ya = a(x)[0]
    torch.manual_seed(4)
    torch.testing.assert_close(ya, b(x)[0])
    with pytest.raises(ValueError, match="num_experts"):
        make_gate("switch", 4, 0)
    with pytest.raises(ValueError, match="1 <= k"):
        make_gate("gshard", 4, 1)


def test_grouped_and_padded_kernels_agree_in_value_and_gradient():
    torch.manual_seed(1)
    w1, b1, w2, b2 = [torch.randn(*s, requires_grad=True) for s in [(3, 8, 12), (3, 12), (3, 12, 8), (3, 8)]]
    h, counts = torch.randn(9, 8, requires_grad=True), torch.tensor([4, 0, 5])
    grads = []
    for padded in (False, True):
        out = grouped_ffn(h, counts, w1, b1, w2, b2, padded=padded)
        grads.append([out, *torch.autograd.grad(out.square().sum(), [h, w1, b1, w2, b2])])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(grads[0][0][:4], F.gelu(h[:4] @ w1[0] + b1[0]) @ w2[0] + b2[0])


def test_per_expert_norm_affine_matches_explicit_experts_in_value_and_gradient():
    torch.manual_seed(2)
    shapes = [(3, 8, 12), (3, 12), (3, 12, 8), (3, 8), (3, 8), (3, 8)]
    w1, b1, w2, b2, gain, bias = [torch.randn(*s, requires_grad=True) for s in shapes]
    h, counts = torch.randn(9, 8, requires_grad=True), torch.tensor([4, 0, 5])
    params = [h, w1, b1, w2, b2, gain, bias]
    out = grouped_ffn(h, counts, w1, b1, w2, b2, norm=(gain, bias))
    got = torch.autograd.grad(out.square().sum(), params)
    rows = [(0, slice(0, 4)), (2, slice(4, 9))]  # expert 1 has no rows: its gain and bias get zero gradient
    ref = torch.cat([F.gelu((h[r] * gain[e] + bias[e]) @ w1[e] + b1[e]) @ w2[e] + b2[e] for e, r in rows])
    want = torch.autograd.grad(ref.square().sum(), params, allow_unused=True)
    torch.testing.assert_close(out, ref)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, torch.zeros_like(g) if w is None else w, rtol=1e-5, atol=1e-5)
    assert got[5][1].abs().sum() == 0 and got[6][1].abs().sum() == 0
