"""A MODEL of one MoE layer's step time for a placement (every number from it is modelled, not measured).

Cluster: W ranks in N nodes of G (rank g on node g // G), one shared inter-node link per node (full duplex),
communication costed with the α–β model fitted on the testbed (replications/moe/costmodel.py, committed fit in
results/moe/comm_benchmark.json). Per step and MoE layer, T[s, e] token-expert assignments go from source rank s
to expert e. A placement is a replica matrix R [E, W] (R[e, g] = 1: rank g holds a replica of e); each source
splits its tokens for e evenly over e's replicas (as replicated.py does); a shadowed expert (FasterMoE) is
computed by every source on itself. That gives the dispatch matrix M [source, destination] and the loads
L_g = sum_s M[s, g]. Then, with b bytes per token (d_model values) and P = 2 d h values of expert parameters:

- all-to-all (flat; costmodel.features('flat') for uneven splits): (G-1) α_a + β_a · max_g intra bytes in or out
  of g + (N-1) G α_e + β_e · max(0, max_n bytes in or out of node n's link - burst); run 4 times per step
  (dispatch and combine, forward and their transposes in backward);
- expert compute: 12 d h max_g L_g / flops (forward 4 d h per assignment, backward twice that; the slowest
  rank gates the layer), as FasterMoE's own policy model (fmoe/transformer.py: 3 * 4 * B * alpha H^2 / bw_mm);
- replica sync: per expert with n > 1 replicas, a ring all-reduce of its gradients, 2 (n-1) (α + β P / n), inter
  when its replicas span nodes; summed over experts (no overlap assumed);
- shadowing: per shadowed expert, its parameters broadcast and its gradients reduced through the owner's link,
  2 (α + β P) (the official policy's "(i+1) * model_size" term);
- placement change: each replica created or moved costs one parameter transfer α + β P, once.
The dense (non-expert) all-reduce is the same under every placement and left out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from replications.moe.costmodel import CostModel


@dataclass(frozen=True)
class Cluster:
    W: int  # ranks
    G: int  # ranks per node
    cost: CostModel
    link: str  # which fitted inter-node link (beta_inter key, Mbit/s)
    d_model: int
    d_hidden: int
    bytes_per_value: int
    flops_per_s: float

    @property
    def N(self) -> int:
        return self.W // self.G

    @property
    def token_bytes(self) -> float:
        return float(self.d_model * self.bytes_per_value)

    @property
    def param_bytes(self) -> float:
        return float(2 * self.d_model * self.d_hidden * self.bytes_per_value)

    def node(self) -> np.ndarray:
        return np.arange(self.W) // self.G


def load_cost_model(path: Path) -> CostModel:
    """The α–β fit committed by `make bench-moe-comm` (results/moe/comm_benchmark.json: analysis.model)."""
    data = json.loads(Path(path).read_text())
    try:
        return CostModel(**data["analysis"]["model"])
    except (KeyError, TypeError) as err:
        raise ValueError(f"{path} holds no α–β fit under analysis.model; run `make bench-moe-comm`") from err


def make_cluster(W: int, G: int, cost: CostModel, link: str, d_model: int, d_hidden: int,
                 bytes_per_value: int = 4, flops_per_s: float = 11.5e12) -> Cluster:
    if W % G:
        raise ValueError(f"{W} ranks do not fill nodes of {G}")
    if link not in cost.beta_inter:
        raise ValueError(f"no fitted inter-node link '{link}'; fitted: {sorted(cost.beta_inter)}")
    return Cluster(W, G, cost, link, d_model, d_hidden, bytes_per_value, flops_per_s)


def dispatch_matrix(T: np.ndarray, R: np.ndarray, shadow: np.ndarray | None = None) -> np.ndarray:
    """M [W, W]: T [W sources, E] split evenly over each expert's replicas R [E, W]; shadowed experts stay home."""
    R = np.asarray(R, dtype=float)
    n = R.sum(1)
    if (n < 1).any():
        raise ValueError(f"experts {np.flatnonzero(n < 1).tolist()} have no replica")
    share = R / n[:, None]  # [E, W]
    T = np.asarray(T, dtype=float)
    if shadow is not None and shadow.any():
        home = T[:, shadow]
        M = T[:, ~shadow] @ share[~shadow]
        return M + np.diag(home.sum(1))
    return T @ share


def a2a_seconds(M: np.ndarray, c: Cluster) -> float:
    node = c.node()
    same = node[:, None] == node[None, :]
    off = ~np.eye(c.W, dtype=bool)
    B = M * c.token_bytes
    intra = B * (same & off)
    t = (c.G - 1) * c.cost.alpha_intra + c.cost.beta_intra * max(intra.sum(1).max(), intra.sum(0).max())
    if c.N > 1:
        member = np.eye(c.N)[node]  # [W, N]
        cross = B * ~same
        out_n, in_n = (member.T @ cross).sum(1), (cross @ member).sum(0)
        link = max(out_n.max(), in_n.max())
        t += (c.N - 1) * c.G * c.cost.alpha_inter + c.cost.beta_inter[c.link] * max(0.0, link - c.cost.burst.get(c.link, 0.0))
    return float(t)


def compute_seconds(M: np.ndarray, c: Cluster) -> float:
    return float(12.0 * c.d_model * c.d_hidden * M.sum(0).max() / c.flops_per_s)


def transfer_seconds(c: Cluster, across_nodes: bool, nbytes: float | None = None) -> float:
    nbytes = c.param_bytes if nbytes is None else nbytes
    if across_nodes:
        return c.cost.alpha_inter + c.cost.beta_inter[c.link] * nbytes
    return c.cost.alpha_intra + c.cost.beta_intra * nbytes


def sync_seconds(R: np.ndarray, c: Cluster) -> float:
    node = c.node()
    total = 0.0
    for row in np.asarray(R, dtype=bool):
        n = int(row.sum())
        if n > 1:
            span = len(set(node[row].tolist())) > 1
            total += 2 * (n - 1) * transfer_seconds(c, span, c.param_bytes / n)
    return total


def step_seconds(T: np.ndarray, R: np.ndarray, c: Cluster, shadow: np.ndarray | None = None) -> dict[str, float]:
    """Modelled seconds of one MoE layer's step, by part."""
    M = dispatch_matrix(T, R, shadow)
    parts = {"a2a": 4 * a2a_seconds(M, c), "compute": compute_seconds(M, c), "sync": sync_seconds(R, c),
             "shadow": 2 * transfer_seconds(c, c.N > 1) * int(shadow.sum()) if shadow is not None else 0.0}
    parts["total"] = sum(parts.values())
    return parts


def gpu_imbalance(T: np.ndarray, R: np.ndarray) -> float:
    L = dispatch_matrix(T, R).sum(0)
    return float(L.max() / L.mean()) if L.mean() > 0 else 1.0
