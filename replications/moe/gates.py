"""Every gate of the MoE papers, each with its balance loss and capacity rule (fact sheets in ../shared/papers).

A gate maps tokens x [T, d] (and, for Hash, token ids) to a Routing. Sources, as the fact sheets record them:
- GShard top-2: fairseq `top2gating` (moe branch, mirrored in EvoMoE's fork), FastMoE `gshard_gate.py`;
- Switch top-1 (plus Switch Transformer's router jitter), k-top-1 (M6), SAM, Hash, and the `hetu` top-2
  variant: HetuMoE `hetu/v1/python/hetu/layers/*Gate.py`;
- BASE: fairseq `base_layer.py` (trainable centroids, own residual branch), auction as Hetu's BalanceGate;
- DTS (EvoMoE): `codecaution/EvoMoE fairseq/modules/moe/topkgate.py`;
- topology-aware (TA-MoE): `Chen-Chang/TA-MoE .../moe/gate/gshard_gate.py`; FasterMoE's topology gate:
  `thu-pacman/FasterMoE fmoe/gates/hir_gate.py`.
`group` is the expert-parallel process group (None: single process); the MoELayer sets it.
"""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from replications.moe.auction import balanced_assignment
from replications.moe.dist import all_gather_cat, world
from replications.moe.routing import (
    Routing,
    apply_capacity,
    balance_loss,
    global_sum,
    global_tokens,
    global_uniform,
    row_softmax,
    topk_capacity,
)


def _stats(keep: Tensor, selected: Tensor) -> dict[str, float]:
    tokens = max(keep.shape[0], 1)
    return {"active_experts": float(selected.sum()) / tokens,
            "dropped_fraction": float((selected & ~keep).sum()) / max(float(selected.sum()), 1.0)}


class Gate(nn.Module):
    residual_branch = False  # True: the layer adds its input itself (BASE); the model must not add another

    def __init__(self, num_experts: int):
        super().__init__()
        if num_experts < 1:
            raise ValueError(f"num_experts must be >= 1, got {num_experts}")
        self.num_experts = num_experts
        self.group = None
        self.capacity_scope = "global"


class TopKGate(Gate):
    """softmax(xW + b), top-k; k=1 Switch, k=2 GShard. Capacity k * ceil(T/E * factor), slot-major.

    k=1 (Switch; fairseq top1gating): weight = p_e of the choice, loss over the choices. Router jitter
    (Switch Transformer, training only): the router's input times U(1 - jitter, 1 + jitter), default 1e-2.
    k=2, variant "gshard" (GShard paper, fairseq top2gating, FastMoE GShardGate): the first expert is the
    argmax; the second by `second_policy`: "sampling" (fairseq's default: argmax of logits + Gumbel noise
    over the other experts), "random" (GShard/FastMoE random routing: the deterministic second is kept
    with probability 2 * g2 / (g1 + g2)) or "top" (deterministic); the balance loss counts first choices
    only; after capacity dropping the kept weights are renormalised to sum to 1 (fairseq's default
    normalize_gate_prob_before_dropping=False). Noise is drawn in evaluation too, as in both references.
    k=2, variant "hetu" (HetuMoE TopGate, as TA-MoE/Hetu runs use it): deterministic top-2, weights
    renormalised before dropping, every slot counted in the loss."""

    def __init__(self, d_model: int, num_experts: int, k: int = 1, capacity_factor: float | None = 1.0,
                 eval_capacity_factor: float | None = None, variant: str = "gshard",
                 second_policy: str = "sampling", jitter: float | None = None):
        super().__init__(num_experts)
        if not 1 <= k <= num_experts:
            raise ValueError(f"top-k gate needs 1 <= k <= E, got k={k}, E={num_experts}")
        if variant not in ("gshard", "hetu"):
            raise ValueError(f"unknown top-k variant '{variant}'; valid: gshard, hetu")
        if second_policy not in ("sampling", "random", "top"):
            raise ValueError(f"unknown second_policy '{second_policy}'; valid: sampling, random, top")
        self.k, self.capacity_factor, self.eval_capacity_factor = k, capacity_factor, eval_capacity_factor
        self.variant = variant if k == 2 else "hetu"  # k=1 is the same in both; k>2 only as Hetu does it
        self.second_policy = second_policy if self.variant == "gshard" else "top"
        self.jitter = (0.01 if k == 1 else 0.0) if jitter is None else jitter
        self.proj = nn.Linear(d_model, num_experts)
        self.generator: torch.Generator | None = None  # set for reproducible noise in tests

    def _noise(self, x: Tensor, cols: int) -> Tensor:
        return global_uniform(x.shape[0], cols, self.group, self.generator, x.device).to(x.dtype)

    def forward(self, x: Tensor, token_ids: Tensor | None = None) -> Routing:
        T, E = x.shape[0], self.num_experts
        if self.training and self.jitter > 0:  # the noise tensor is fresh: scale it in place
            x = x * self._noise(x, x.shape[1]).mul_(2 * self.jitter).add_(1 - self.jitter)
        logits = self.proj(x)
        probs = row_softmax(logits)
        if self.k == 2 and self.variant == "gshard":
            first = probs.argmax(-1, keepdim=True)
            scores = logits
            if self.second_policy == "sampling":
                scores = logits - torch.log(-torch.log(self._noise(x, E).clamp(1e-10, 1 - 1e-10)))
            second = scores.detach().scatter(1, first, float("-inf")).argmax(-1, keepdim=True)
            expert = torch.cat([first, second], 1)
            gates = probs.gather(1, expert)
            selected = torch.ones_like(expert, dtype=torch.bool)
            if self.second_policy == "random":
                share = gates[:, 1] / gates.sum(1)
                selected[:, 1] = 2 * share.detach() > self._noise(x, 1).squeeze(1)
        else:
            top = probs.max(-1, keepdim=True) if self.k == 1 else probs.topk(self.k, dim=-1)  # max: 3.5x faster
            expert, gates = top.indices, top.values
            if self.k > 1:
                gates = gates / gates.sum(-1, keepdim=True)
            selected = torch.ones_like(expert, dtype=torch.bool)
        factor = self.capacity_factor if self.training else self.eval_capacity_factor
        cap = topk_capacity(self.k, global_tokens(T, self.group), E, factor)
        keep = apply_capacity(expert, selected, E, cap, self.group, self.capacity_scope)
        if self.k == 2 and self.variant == "gshard":
            kept = gates * keep
            weight = kept / kept.sum(-1, keepdim=True).clamp(min=torch.finfo(kept.dtype).eps)
            aux = balance_loss(probs, expert[:, :1], selected[:, :1], E, self.group)
        else:
            weight = gates
            aux = balance_loss(probs, expert, selected, E, self.group)
        return Routing(expert, weight, keep, aux, stats=_stats(keep, selected))


class KTop1Gate(Gate):
    """M6 expert prototyping: E experts in k prototypes of E/k; softmax and top-1 inside each prototype
    independently; loss = sum of the k prototypes' balance losses (each with E/k experts)."""

    def __init__(self, d_model: int, num_experts: int, k: int = 2, capacity_factor: float | None = 1.0,
                 eval_capacity_factor: float | None = None):
        super().__init__(num_experts)
        if k < 1 or num_experts % k:
            raise ValueError(f"k-top-1 needs E ({num_experts}) divisible by k ({k})")
        self.k, self.capacity_factor, self.eval_capacity_factor = k, capacity_factor, eval_capacity_factor
        self.proj = nn.Linear(d_model, num_experts)

    def forward(self, x: Tensor, token_ids: Tensor | None = None) -> Routing:
        T, per = x.shape[0], self.num_experts // self.k
        probs = F.softmax(self.proj(x).view(T, self.k, per), dim=-1)  # [T, k, E/k]
        top = probs.max(dim=-1)
        expert = top.indices + torch.arange(self.k, device=x.device) * per  # global expert id of each prototype's choice
        selected = torch.ones_like(expert, dtype=torch.bool)
        factor = self.capacity_factor if self.training else self.eval_capacity_factor
        cap = topk_capacity(1, global_tokens(T, self.group), per, factor)
        keep = apply_capacity(expert, selected, self.num_experts, cap, self.group, self.capacity_scope)
        aux = sum(balance_loss(probs[:, p], top.indices[:, p:p + 1], selected[:, p:p + 1], per, self.group)
                  for p in range(self.k))
        return Routing(expert, top.values, keep, aux, stats=_stats(keep, selected))


class SAMGate(Gate):
    """Switch-and-Mixture: experts in groups of `group_size` (one node's experts); switch to the group
    with the largest summed probability, then mix the top-k experts inside it. Loss = balance loss +
    alignment loss sum_{j outside the group} max(0, p_j - p_(k-th selected)), averaged over tokens."""

    def __init__(self, d_model: int, num_experts: int, group_size: int, k: int = 1,
                 capacity_factor: float | None = 1.0, eval_capacity_factor: float | None = None):
        super().__init__(num_experts)
        if group_size < 1 or num_experts % group_size or not 1 <= k <= group_size:
            raise ValueError(f"SAM needs E ({num_experts}) divisible by group_size ({group_size}), 1 <= k <= it")
        self.group_size, self.k = group_size, k
        self.capacity_factor, self.eval_capacity_factor = capacity_factor, eval_capacity_factor
        self.proj = nn.Linear(d_model, num_experts)

    def forward(self, x: Tensor, token_ids: Tensor | None = None) -> Routing:
        T, G = x.shape[0], self.group_size
        probs = row_softmax(self.proj(x))
        grouped = probs.view(T, -1, G)
        chosen = grouped.sum(-1).argmax(-1)  # [T]
        rows = torch.arange(T, device=x.device)
        inside = grouped[rows, chosen]  # [T, G]
        top = inside.topk(self.k, dim=-1)
        expert = top.indices + (chosen * G).unsqueeze(1)
        selected = torch.ones_like(expert, dtype=torch.bool)
        factor = self.capacity_factor if self.training else self.eval_capacity_factor
        cap = topk_capacity(self.k, global_tokens(T, self.group), self.num_experts, factor)
        keep = apply_capacity(expert, selected, self.num_experts, cap, self.group, self.capacity_scope)
        outside = torch.ones_like(probs, dtype=torch.bool).view(T, -1, G)
        outside[rows, chosen] = False
        kth = top.values[:, -1:]
        align = (F.relu(probs - kth) * outside.view(T, -1)).sum(-1)
        n = global_tokens(T, self.group)
        aux = balance_loss(probs, expert, selected, self.num_experts, self.group) + global_sum(align.sum(), self.group) / n
        return Routing(expert, top.values, keep, aux, stats=_stats(keep, selected))


class BaseGate(Gate):
    """BASE layer (fairseq base_layer.py): trainable orthogonally-initialised centroids (gain 0.1); scores
    x.c; training assigns every expert exactly T/E tokens of the global batch (auction); evaluation is
    greedy argmax. The layer is its own residual branch: out = alpha * (x + FFN_e(LN_e(x))) + (1 - alpha) * x
    = x + alpha * FFN_e(LN_e(x)), alpha = sigmoid(x . c_e), each expert with its own LayerNorm and a
    zero-initialised second matrix (residual_branch tells the MoELayer to build experts that way; the model
    feeds it the raw residual stream, not a normalised input). The centroids learn only through alpha, as in
    fairseq (routing scores are taken without gradient). No balance loss, nothing dropped."""

    residual_branch = True

    def __init__(self, d_model: int, num_experts: int):
        super().__init__(num_experts)
        centroids = torch.empty(num_experts, d_model)
        nn.init.orthogonal_(centroids, gain=0.1)
        self.centroids = nn.Parameter(centroids)

    def forward(self, x: Tensor, token_ids: Tensor | None = None) -> Routing:
        logits = x @ self.centroids.t()  # [T, E]; routing reads it without gradient, alpha with
        scores = logits.detach()
        if self.training:
            rank, W = world(self.group)
            all_scores = all_gather_cat(scores, self.group)  # identical auction on every rank
            expert = balanced_assignment(all_scores.cpu()).to(x.device)[rank * x.shape[0]:(rank + 1) * x.shape[0]]
        else:
            expert = scores.argmax(-1)
        alpha = torch.sigmoid(logits.gather(1, expert.unsqueeze(1)))  # [T, 1]: sigmoid(x . c_e), differentiable
        keep = torch.ones_like(alpha, dtype=torch.bool)
        return Routing(expert.unsqueeze(1), alpha, keep, x.new_zeros(()), residual=torch.ones_like(alpha.squeeze(1)),
                       stats=_stats(keep, keep))


class HashGate(Gate):
    """Hash layer: a fixed random token-id -> expert table (balanced over the vocabulary, seeded);
    weight 1, no balance loss, nothing dropped."""

    def __init__(self, num_experts: int, vocab_size: int, seed: int = 0):
        super().__init__(num_experts)
        g = torch.Generator().manual_seed(seed)
        self.register_buffer("table", torch.randperm(vocab_size, generator=g) % num_experts)

    def forward(self, x: Tensor, token_ids: Tensor | None = None) -> Routing:
        if token_ids is None:
            raise ValueError("the hash gate routes by token id: pass token_ids to the MoE layer")
        expert = self.table[token_ids.reshape(-1)].unsqueeze(1)
        keep = torch.ones_like(expert, dtype=torch.bool)
        return Routing(expert, x.new_ones(expert.shape), keep, x.new_zeros(()), stats=_stats(keep, keep))


class DTSGate(Gate):
    """EvoMoE's dense-to-sparse gate (topkgate.py). Logits z = W x (no bias); temperature tau is set by the
    trainer every step (schedule.temperature). Modes:
      single: every token to expert 0 with weight 1 (the expert-diversify phase's one dense expert);
      dense:  tau <= 0 in the code: softmax-weighted mixture of all experts, zero aux loss;
      soft:   g = GumbelSoftmax(z, tau); experts with g_e > threshold (0.001) are selected (dynamic k),
              weights softmax(z)_e (use_gumbel_gates=False) or g_e; nothing dropped;
      hard:   top-1 of the Gumbel-softmax sample (switch_to_hard_gumbel_softmax).
    Loss (soft/hard): E^2 * mean_e(m_e * c_e), m_e = mean combine weight, c_e = fraction of tokens
    selecting e. Evaluation (soft/hard): top-1 of z, weight softmax(z), no dropping."""

    def __init__(self, d_model: int, num_experts: int, threshold: float = 0.001, use_gumbel_gates: bool = False):
        super().__init__(num_experts)
        self.threshold, self.use_gumbel_gates = threshold, use_gumbel_gates
        self.proj = nn.Linear(d_model, num_experts, bias=False)
        self.mode, self.temperature = "soft", 1.0
        self.generator: torch.Generator | None = None  # set for reproducible Gumbel noise in tests

    def gumbel_softmax(self, z: Tensor) -> Tensor:
        # noise cut from one draw over the global batch: the same routing whatever the expert-parallel degree
        u = global_uniform(z.shape[0], z.shape[1], self.group, self.generator, z.device).to(z.dtype)
        u = u.clamp_(1e-10, 1 - 1e-10)
        return row_softmax((z - torch.log(-torch.log(u))) / self.temperature)

    def forward(self, x: Tensor, token_ids: Tensor | None = None) -> Routing:
        T, E = x.shape[0], self.num_experts
        z = self.proj(x)
        probs = row_softmax(z)
        all_experts = torch.arange(E, device=x.device).expand(T, E)
        if self.mode == "single":
            one = torch.zeros(T, 1, dtype=torch.long, device=x.device)
            keep = torch.ones(T, 1, dtype=torch.bool, device=x.device)
            return Routing(one, x.new_ones(T, 1), keep, z.new_zeros(()), stats=_stats(keep, keep))
        if self.mode == "dense" or self.temperature <= 0:
            keep = torch.ones(T, E, dtype=torch.bool, device=x.device)
            return Routing(all_experts, probs, keep, z.new_zeros(()), stats=_stats(keep, keep))
        if self.mode not in ("soft", "hard"):
            raise ValueError(f"unknown DTS mode '{self.mode}'; valid: single, dense, soft, hard")
        if not self.training:
            top = probs.max(-1)
            keep = torch.ones(T, 1, dtype=torch.bool, device=x.device)
            return Routing(top.indices.unsqueeze(1), top.values.unsqueeze(1), keep, z.new_zeros(()),
                           stats=_stats(keep, keep))
        g = self.gumbel_softmax(z)
        source = g if self.use_gumbel_gates else probs
        if self.mode == "soft":
            selected = g > self.threshold
            expert, weight = all_experts, source * selected
        else:
            expert = g.argmax(-1, keepdim=True)
            selected = torch.ones_like(expert, dtype=torch.bool)
            weight = source.gather(1, expert)
        n = global_tokens(T, self.group)
        mask = z.new_zeros(T, E).scatter_(1, expert, selected.to(z.dtype))
        dense_w = z.new_zeros(T, E).scatter(1, expert, weight)
        m = global_sum(dense_w.sum(0), self.group) / n
        c = global_sum(mask.sum(0), self.group).detach() / n
        aux = E * E * (m * c).mean()
        return Routing(expert, weight, selected, aux, stats=_stats(selected, selected))


class _RankEmulation:
    """Gates whose statistics are per rank (TA-MoE, FasterMoE): with a process group each rank sees its own
    tokens; in one process with `world_size` W > 1 the T rows are W ranks' equal, contiguous batches (rank
    order), each routed with its own rank's statistics -- so one process reproduces W ranks exactly.

    local_routers=True: every rank trains its own router (TA-MoE run.sh --gate_reduce_freq 1000: the gate's
    gradients are not all-reduced, its parameters are averaged every that many steps; the same init on
    every rank, broadcast at start). With a process group the router's parameters are marked `rank_local`
    (sync_grads leaves them alone); in one process the gate holds W identical copies, rank r's rows routed
    by copy r (`average_routers` is the periodic averaging). The emulation's gradient of copy r is 1/W of
    rank r's own (the global loss is the ranks' mean): Adam does not see the scale, clipping slightly does."""

    world_size: int | None
    group: object

    def ranks(self, T: int) -> tuple[int, list[tuple[int, slice]]]:
        rank, W = world(self.group)
        if W > 1:
            if self.world_size not in (None, W):
                raise ValueError(f"world_size={self.world_size} but the process group has {W} ranks")
            return W, [(rank, slice(0, T))]
        W = self.world_size or 1
        if T % W:
            raise ValueError(f"{T} tokens cannot be split into {W} emulated ranks' equal batches")
        n = T // W
        return W, [(r, slice(r * n, (r + 1) * n)) for r in range(W)]

    def make_router(self, d_model: int, num_experts: int, local: bool) -> None:
        self.proj = nn.Linear(d_model, num_experts)
        self.routers = None
        if local and world(None)[1] == 1 and (self.world_size or 1) > 1:
            self.routers = nn.ModuleList(copy.deepcopy(self.proj) for _ in range(self.world_size))
            self.proj = self.routers[0]
        if local:
            for p in self.proj.parameters() if self.routers is None else self.routers.parameters():
                p.rank_local = True

    def router_logits(self, x: Tensor, parts: list[tuple[int, slice]]) -> Tensor:
        if self.routers is None:
            return self.proj(x)
        return torch.cat([self.routers[r](x[sl]) for r, sl in parts])

    @torch.no_grad()
    def average_routers(self) -> None:
        """The periodic parameter averaging of local routers (all_reduce_gate_parameters)."""
        if self.routers is not None:
            for params in zip(*(r.parameters() for r in self.routers)):
                mean = torch.stack(params).mean(0)
                for p in params:
                    p.copy_(mean)
        elif getattr(self.proj.weight, "rank_local", False) and world(self.group)[1] > 1:
            for p in self.proj.parameters():
                torch.distributed.all_reduce(p, group=self.group)
                p.div_(world(self.group)[1])


def _dispatch(expert: Tensor, keep: Tensor, parts: list[tuple[int, slice]], W: int, e_loc: int) -> Tensor:
    """[source ranks here, W] kept token-expert assignments from each source rank to each destination rank."""
    rows = [torch.bincount(expert[sl][keep[sl]] // e_loc, minlength=W) for _, sl in parts]
    return torch.stack(rows).cpu()


class TopologyGate(_RankEmulation, Gate):
    """TA-MoE's GShard gate (gshard_gate.py at b3aff03, with moe_layer.py and utils.limit_by_capacity):
    top-k over the logits; c_e = (top-k selections hitting e) / S, all k slots counted (sum_e c_e = k);
    m_e = mean softmax(logits)_e; loss = E_loc^2 * mean_e(c_e * s_e * m_e) with s = softmax(T[rank]) * W^2
    per destination rank (s = 1 without a topology: the plain GShard loss of this code). Statistics are
    each rank's own (S = its tokens); the W ranks' losses are averaged, as data parallelism averages their
    gradients. Capacity: ceil(rate * S) per expert (rate 1.2 train, 2.4 eval), taken on the receiving side
    over all source ranks in rank order, each rank's selections in token-major order (Paddle's
    limit_by_capacity then prune_gate_by_capacity). Combine weights: `combine="logits"` is the code's
    (moe_layer.py multiplies the expert outputs by the raw top-k logits, no softmax); "softmax" normalises
    them over the k chosen (FastMoE's convention). `last_dispatch`: [source rank, destination rank] kept
    assignments of the last call. local_routers: see _RankEmulation."""

    def __init__(self, d_model: int, num_experts: int, k: int = 2, topology: Tensor | None = None,
                 capacity_rate: tuple[float, float] = (1.2, 2.4), world_size: int | None = None,
                 combine: str = "logits", local_routers: bool = False):
        super().__init__(num_experts)
        if combine not in ("logits", "softmax"):
            raise ValueError(f"unknown combine '{combine}'; valid: logits, softmax")
        self.k, self.capacity_rate, self.combine = k, tuple(capacity_rate), combine
        self.capacity_scope = "global"
        self.world_size = world_size
        self.make_router(d_model, num_experts, local_routers)
        self.register_buffer("topology", None if topology is None else torch.as_tensor(topology, dtype=torch.float32))
        self.last_dispatch: Tensor | None = None

    def destination_scale(self, rank: int, W: int) -> Tensor:
        """s_e for every expert e as seen from `rank`: softmax(T[rank]) * W^2 per destination rank."""
        if self.num_experts % W:
            raise ValueError(f"E ({self.num_experts}) must be divisible by the world size ({W})")
        if self.topology is None:
            return self.proj.weight.new_ones(self.num_experts)
        if self.topology.shape != (W, W):
            raise ValueError(f"topology must be {W}x{W}, got {tuple(self.topology.shape)}")
        s = F.softmax(self.topology[rank], dim=0) * W * W
        return s.repeat_interleave(self.num_experts // W)

    def rank_loss(self, logits: Tensor, top: Tensor, rank: int, W: int) -> Tensor:
        S, E = logits.shape
        c = logits.new_zeros(E).index_add_(0, top.reshape(-1), logits.new_ones(top.numel())).detach() / S
        m = F.softmax(logits, dim=-1).mean(0)
        return (E // W) ** 2 * (c * self.destination_scale(rank, W) * m).mean()

    def forward(self, x: Tensor, token_ids: Tensor | None = None) -> Routing:
        T, E, k = x.shape[0], self.num_experts, self.k
        W, parts = self.ranks(T)
        logits = self.router_logits(x, parts)
        top = logits.topk(k, dim=-1)
        weight = top.values if self.combine == "logits" else F.softmax(top.values, dim=-1)
        selected = torch.ones_like(top.indices, dtype=torch.bool)
        S = T // len(parts)
        cap = math.ceil(self.capacity_rate[0 if self.training else 1] * S)
        # token-major order over (token, slot), ranks in order: one column of T*k selections
        keep = apply_capacity(top.indices.reshape(-1, 1), selected.reshape(-1, 1), E, cap, self.group,
                              "global").view(T, k)
        aux = sum(self.rank_loss(logits[sl], top.indices[sl], r, W) for r, sl in parts) / len(parts)
        self.last_dispatch = _dispatch(top.indices, keep, parts, W, E // W)
        return Routing(top.indices, weight, keep, aux, stats=_stats(keep, selected))


class FasterMoETopologyGate(_RankEmulation, Gate):
    """FasterMoE's topology-aware gate (thu-pacman/FasterMoE fmoe/gates/hir_gate.py, HirGate), without
    expert shadowing: top-2 over the logits; if at least int(S * off_node_ratio) of a rank's S tokens have
    a top-1 expert on another node, every token of that rank is re-routed top-2 over its own node's experts,
    except the int(S * off_node_ratio) off-node tokens with the highest top-1 logits, which keep that
    off-node top-1 expert as their second choice; otherwise plain top-2. Weights: softmax over the two
    chosen logits. Loss: the GShard loss of that code over top-1 choices, E_loc^2 * mean_e(c_e * m_e), per
    rank (averaged over ranks). No capacity (its capacity limit is commented out). `ranks_per_node`: ranks
    r*n .. r*n+n-1 form a node (FasterMoE: nw_per_node = 4). local_routers: see _RankEmulation."""

    def __init__(self, d_model: int, num_experts: int, ranks_per_node: int, off_node_ratio: float = 0.14,
                 world_size: int | None = None, local_routers: bool = False):
        super().__init__(num_experts)
        if ranks_per_node < 1 or not 0 <= off_node_ratio <= 1:
            raise ValueError(f"need ranks_per_node >= 1 and 0 <= off_node_ratio <= 1, got {ranks_per_node}, "
                             f"{off_node_ratio}")
        self.k, self.ranks_per_node, self.off_node_ratio = 2, ranks_per_node, off_node_ratio
        self.world_size = world_size
        self.make_router(d_model, num_experts, local_routers)
        self.last_dispatch: Tensor | None = None

    def route_rank(self, logits: Tensor, rank: int, W: int) -> tuple[Tensor, Tensor]:
        S, E = logits.shape
        if W % self.ranks_per_node or E % W:
            raise ValueError(f"need W ({W}) divisible by ranks_per_node ({self.ranks_per_node}), E ({E}) by W")
        per_node = self.ranks_per_node * (E // W)
        node = rank // self.ranks_per_node
        off_node = torch.ones(E, dtype=torch.bool, device=logits.device)
        off_node[node * per_node:(node + 1) * per_node] = False
        top = logits.topk(2, dim=-1)
        top1_idx, top1_val = top.indices[:, 0], top.values[:, 0].detach()
        leaving = off_node[top1_idx]
        threshold = int(S * self.off_node_ratio)
        if int(leaving.sum()) < threshold:
            return top.indices, top.values
        keep_off = top1_val.masked_fill(~leaving, float("-inf")).topk(threshold).indices
        idx = logits.detach().masked_fill(off_node, float("-inf")).topk(2, dim=-1).indices
        idx[keep_off, 1] = top1_idx[keep_off]
        return idx, logits.gather(1, idx)

    def forward(self, x: Tensor, token_ids: Tensor | None = None) -> Routing:
        E = self.num_experts
        W, parts = self.ranks(x.shape[0])
        logits = self.router_logits(x, parts)
        expert, values, aux = [], [], 0.0
        for r, sl in parts:
            lg = logits[sl]
            idx, val = self.route_rank(lg, r, W)
            expert.append(idx)
            values.append(val)
            first = lg.topk(1, dim=-1).indices.squeeze(1)  # the loss counts the unrestricted top-1 choice
            c = lg.new_zeros(E).index_add_(0, first, lg.new_ones(lg.shape[0])).detach() / lg.shape[0]
            aux = aux + (E // W) ** 2 * (c * F.softmax(lg, dim=-1).mean(0)).mean()
        expert_t = torch.cat(expert)
        keep = torch.ones_like(expert_t, dtype=torch.bool)
        self.last_dispatch = _dispatch(expert_t, keep, parts, W, E // W)
        return Routing(expert_t, F.softmax(torch.cat(values), dim=-1), keep, aux / len(parts),
                       stats=_stats(keep, keep))


GATES = ("switch", "gshard", "ktop1", "sam", "base", "hash", "dts", "topology", "fastermoe_topology")


def make_gate(kind: str, d_model: int, num_experts: int, **kw) -> Gate:
    """Build a gate by name; kw are that gate's options (see each class)."""
    if kind == "switch":
        return TopKGate(d_model, num_experts, k=1, **kw)
    if kind == "gshard":
        return TopKGate(d_model, num_experts, k=2, **kw)
    if kind == "ktop1":
        return KTop1Gate(d_model, num_experts, **kw)
    if kind == "sam":
        return SAMGate(d_model, num_experts, **kw)
    if kind == "base":
        return BaseGate(d_model, num_experts, **kw)
    if kind == "hash":
        return HashGate(num_experts, **kw)
    if kind == "dts":
        return DTSGate(d_model, num_experts, **kw)
    if kind == "topology":
        return TopologyGate(d_model, num_experts, **kw)
    if kind == "fastermoe_topology":
        return FasterMoETopologyGate(d_model, num_experts, **kw)
    raise ValueError(f"unknown gate '{kind}'; valid: {', '.join(GATES)}")
