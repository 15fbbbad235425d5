"""The MoE layers a user would pick instead of the suite's, built to compute the same function for the benchmark.

Every peer gets the suite layer's weights copied in (router weight, expert matrices), so its output can be
checked against the layer's before it is timed (`agreement`): the same top-k routing with no capacity limit
(nothing dropped, so every peer does the same expert work), the same 2-layer GELU experts.
- `hf_switch`: transformers' SwitchTransformersSparseMLP (a Python loop over experts; top-1 only);
- `hf_grouped` / `hf_eager`: transformers' MixtralSparseMoeBlock (its router: softmax, top-k, weights
  renormalised over the k) with transformers' own non-gated experts class (NemotronHExperts: up, act, down,
  the layer's FFN; Mixtral's gated SwiGLU experts would compute another function) under the experts
  implementation switch: "grouped_mm" (torch._grouped_mm over tokens sorted by expert) and "eager" (a loop
  over experts). "batched_mm" is not timed: it gathers a [tokens x k, h, d] copy of the weights per pass
  (17 GB at 16k tokens), a decoding path;
- `deepspeed`: deepspeed.moe.layer.MoE (drop_tokens=False: capacity = the fullest expert, every expert
  padded to it; use_rts off, as it only matters when tokens are dropped; 2nd expert deterministic), in a
  one-process gloo group;
- `dense`: an FFN of equal active FLOPs (hidden k x h) on the same tokens; `ceiling`: the layer's six
  grouped matmuls alone at its routing's per-expert row counts (what routing, gathers and combine add).
Top-1 under Mixtral's router weighs each token's expert output by 1 (p / p), the layer by p: its output is
checked as the layer's divided by p, and its input gradient is not compared.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from replications.moe import MoELayer, make_gate

PEERS = ("hf_switch", "hf_grouped", "hf_eager", "deepspeed")  # timed against the suite with dense and ceiling
TOP1_ONLY = {"hf_switch": "SwitchTransformersSparseMLP routes top-1 only"}


@dataclass
class Peer:
    name: str
    forward: Callable[[Tensor], tuple[Tensor, Tensor | None]]  # x [T, d] -> (y [T, d], aux loss or None)
    params: list[nn.Parameter]


class Dense(nn.Module):
    def __init__(self, d: int, h: int):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, h), nn.Linear(h, d)

    def forward(self, x: Tensor) -> tuple[Tensor, None]:
        return self.fc2(F.gelu(self.fc1(x))), None


def suite_layer(d: int, h: int, E: int, k: int, seed: int = 0) -> MoELayer:
    """The layer as the benchmark runs it: top-k softmax gate without capacity (k=2: Hetu's deterministic
    top-2, weights renormalised), no router jitter, gate bias zero (the peers' routers have none)."""
    torch.manual_seed(seed)
    gate = make_gate("switch", d, E, capacity_factor=None, jitter=0.0) if k == 1 else \
        make_gate("gshard", d, E, capacity_factor=None, variant="hetu")
    with torch.no_grad():
        gate.proj.bias.zero_()
    return MoELayer(d, h, gate)


def _hf_switch(layer: MoELayer, max_tokens: int) -> nn.Module:
    from transformers.models.switch_transformers.configuration_switch_transformers import SwitchTransformersConfig
    from transformers.models.switch_transformers.modeling_switch_transformers import SwitchTransformersSparseMLP

    E, d, h = layer.w1.shape
    cfg = SwitchTransformersConfig(d_model=d, d_ff=h, num_experts=E, expert_capacity=max_tokens,
                                   router_jitter_noise=0.0, dense_act_fn="gelu", dropout_rate=0.0)
    m = SwitchTransformersSparseMLP(cfg)
    with torch.no_grad():
        m.router.classifier.weight.copy_(layer.gate.proj.weight)
        for e in range(E):
            m.experts[f"expert_{e}"].wi.weight.copy_(layer.w1[e].t())
            m.experts[f"expert_{e}"].wo.weight.copy_(layer.w2[e].t())
    return m


def _hf_mixtral(layer: MoELayer, k: int, implementation: str) -> nn.Module:
    from transformers.models.mixtral.configuration_mixtral import MixtralConfig
    from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock
    from transformers.models.nemotron_h.configuration_nemotron_h import NemotronHConfig
    from transformers.models.nemotron_h.modeling_nemotron_h import NemotronHExperts

    E, d, h = layer.w1.shape
    m = MixtralSparseMoeBlock(MixtralConfig(hidden_size=d, intermediate_size=h, num_local_experts=E,
                                            num_experts_per_tok=k, router_jitter_noise=0.0))
    m.experts = NemotronHExperts(NemotronHConfig(hidden_size=d, moe_intermediate_size=h, n_routed_experts=E,
                                                 mlp_hidden_act="gelu", experts_implementation=implementation))
    with torch.no_grad():
        m.gate.weight.copy_(layer.gate.proj.weight)
        m.experts.up_proj.copy_(layer.w1.transpose(1, 2))
        m.experts.down_proj.copy_(layer.w2.transpose(1, 2))
    return m


def deepspeed_ready() -> str | None:
    """None once DeepSpeed's expert-parallel groups exist in this process (a one-rank gloo group), else why not."""
    try:
        import deepspeed
        from deepspeed import comm
    except Exception as err:  # any import failure is the reason the peer is absent
        return f"import deepspeed failed: {type(err).__name__}: {err}"
    if not comm.is_initialized():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        try:
            deepspeed.init_distributed("gloo", auto_mpi_discovery=False, verbose=False)
        except Exception as err:
            return f"deepspeed.init_distributed('gloo') failed: {type(err).__name__}: {err}"
    return None


def _deepspeed(layer: MoELayer, k: int) -> nn.Module:
    from deepspeed.moe.layer import MoE

    E, d, h = layer.w1.shape
    expert = nn.Sequential(nn.Linear(d, h), nn.GELU(), nn.Linear(h, d))
    m = MoE(d, expert, num_experts=E, k=k, min_capacity=0, drop_tokens=False, use_rts=False,
            top2_2nd_expert_sampling=False)
    m.set_deepspeed_parallelism()
    with torch.no_grad():
        m.deepspeed_moe.gate.wg.weight.copy_(layer.gate.proj.weight)
        for e, ex in enumerate(m.deepspeed_moe.experts.deepspeed_experts):
            ex[0].weight.copy_(layer.w1[e].t()), ex[0].bias.copy_(layer.b1[e])
            ex[2].weight.copy_(layer.w2[e].t()), ex[2].bias.copy_(layer.b2[e])
    return m


def build(name: str, layer: MoELayer, k: int, max_tokens: int) -> Peer:
    """Peer `name` with the layer's weights copied in."""
    if name == "suite":
        return Peer(name, lambda x: layer(x), list(layer.parameters()))
    if name == "hf_switch":
        m = _hf_switch(layer, max_tokens)
        return Peer(name, lambda x: (m(x.unsqueeze(0)).squeeze(0), None), list(m.parameters()))
    if name in ("hf_grouped", "hf_eager"):
        m = _hf_mixtral(layer, k, "grouped_mm" if name == "hf_grouped" else "eager")
        return Peer(name, lambda x: (m(x.unsqueeze(0)).squeeze(0), None), list(m.parameters()))
    if name == "deepspeed":
        m = _deepspeed(layer, k)

        def run(x: Tensor) -> tuple[Tensor, Tensor]:
            y, aux, _ = m(x)
            return y, aux
        return Peer(name, run, list(m.parameters()))
    if name == "dense":
        E, d, h = layer.w1.shape
        m = Dense(d, k * h)
        return Peer(name, m, list(m.parameters()))
    raise ValueError(f"unknown peer {name!r}")


def one_pass(peer: Peer, x: Tensor) -> None:
    """Forward and backward as inside a network: the input's gradient and every parameter's."""
    for p in peer.params:
        p.grad = None
    x.grad = None
    y, aux = peer.forward(x)
    loss = y.square().mean()
    (loss if aux is None else loss + 0.01 * aux).backward()


def ceiling(layer: MoELayer, counts: list[int]) -> Callable[[], None]:
    """The layer's six expert matmuls of forward+backward as grouped matmuls on random data at these per-expert
    row counts, nothing else: a lower bound for the layer's pass."""
    E, d, h = layer.w1.shape
    n = sum(counts)
    offs = torch.tensor(counts).cumsum(0).to(torch.int32)
    x, g1, z, g2 = torch.randn(n, d), torch.randn(n, h), torch.randn(n, h), torch.randn(n, d)
    w1, w2 = layer.w1.detach(), layer.w2.detach()

    def run() -> None:
        for a, w, g in ((x, w1, g1), (z, w2, g2)):
            torch._grouped_mm(a, w, offs=offs), torch._grouped_mm(g, w.transpose(1, 2), offs=offs)
            torch._grouped_mm(a.t(), g, offs=offs)
    return run


def agreement(layer: MoELayer, peer: Peer, x: Tensor, k: int) -> dict[str, float | bool | int]:
    """Largest |peer - layer| on output and input gradient (loss: mean square of the output, no aux), scaled
    by the layer's largest value; `agrees` when both are below 1e-4. Tokens whose k-th and (k+1)-th router logits
    lie within 1e-5 are left out (`near_ties`): rounding may route them either way, in any implementation."""
    xs, xp = x.detach().clone().requires_grad_(), x.detach().clone().requires_grad_()
    y, _ = layer(xs)
    y.square().mean().backward()
    yp, _ = peer.forward(xp)
    yp.square().mean().backward()
    with torch.no_grad():
        logits = layer.gate.proj(xs)
        top = logits.topk(min(k + 1, logits.shape[1]), dim=1).values
        rows = (top[:, k - 1] - top[:, -1] >= 1e-5) if top.shape[1] > k else torch.ones(len(top), dtype=torch.bool)
        want = y.detach()[rows]
        unit_weight = peer.name in ("hf_grouped", "hf_eager") and k == 1  # Mixtral's top-1 weight is 1, the layer's p
        if unit_weight:
            want = want / logits[rows].softmax(-1).max(-1).values.unsqueeze(1)
        out = float((yp.detach()[rows] - want).abs().max() / want.abs().max())
        grad = 0.0 if unit_weight else float((xp.grad[rows] - xs.grad[rows]).abs().max() / xs.grad[rows].abs().max())
    return {"output_rel_err": out, "input_grad_rel_err": grad, "near_ties": int((~rows).sum()),
            "agrees": out < 1e-4 and grad < 1e-4}
