"""An α–β cost model of flat and hierarchical all-to-all, fitted by least squares on measured timings.

A message of s bytes costs α + β·s: α (seconds) per message, β (seconds per byte) = 1 / bandwidth, with
one (α, β) inside a node and one between nodes (β_inter per shaped link rate, α's shared). Per op, with
N nodes of G ranks (W = N·G) and B bytes sent by each rank in all (B / W to every rank):

- p2p_intra / p2p_inter, one message of B bytes: α + β·B;
- flat all-to-all: each rank sends G-1 messages inside its node and (N-1)·G across; the node's single link
  carries what its G ranks send out, G·B·(N-1)/N bytes:
      T = (G-1)·(α_a + β_a·B/W) + (N-1)·G·α_e + β_e·G·B·(N-1)/N;
- hierarchical (H-A2A): gathering counts and data at the leader and scattering back are 3·(G-1) intra
  messages, 2·(G-1)·B bytes through the leader; leaders exchange N-1 messages, the same G·B·(N-1)/N bytes:
      T = 3·(G-1)·α_a + 2·(G-1)·β_a·B + (N-1)·α_e + β_e·G·B·(N-1)/N.

The link bytes are the same for both, so H-A2A wins only through latency, for B below
    B* = ((N-1)·(G-1)·α_e - 2·(G-1)·α_a) / ((G-1)·β_a·(2 - 1/W)),
whatever β_e is (within this model). The fit uses only p2p and flat timings; hierarchical timings are
then predicted out of sample, so their residuals test the model.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

OPS = ("p2p_intra", "p2p_inter", "flat", "hier")


def features(op: str, N: int, G: int, B: float) -> tuple[float, float, float, float]:
    """(intra messages, intra bytes, inter messages, inter bytes) on the critical path of one op."""
    W = N * G
    if op == "p2p_intra":
        return 1.0, B, 0.0, 0.0
    if op == "p2p_inter":
        return 0.0, 0.0, 1.0, B
    link = G * B * (N - 1) / N
    if op == "flat":
        return float(G - 1), (G - 1) * B / W, float((N - 1) * G), link
    if op == "hier":
        return 3.0 * (G - 1), 2.0 * (G - 1) * B, float(N - 1), link
    raise ValueError(f"unknown op {op!r}; one of {OPS}")


@dataclass
class CostModel:
    alpha_intra: float  # s per message inside a node
    beta_intra: float  # s per byte inside a node
    alpha_inter: float  # s per message between nodes
    beta_inter: dict[str, float] = field(default_factory=dict)  # s per byte between nodes, per link (rate key)

    def predict(self, op: str, N: int, G: int, B: float, link: str) -> float:
        ka, ba, ke, be = features(op, N, G, B)
        return self.alpha_intra * ka + self.beta_intra * ba + self.alpha_inter * ke + self.beta_inter[link] * be

    def crossover(self, N: int, G: int) -> float | None:
        """Per-rank bytes B* below which H-A2A is predicted faster (None: never; inf: always)."""
        if G == 1 or N == 1:
            return None  # one leader per rank, or no inter-node step: nothing to aggregate
        W = N * G
        gain = (N - 1) * (G - 1) * self.alpha_inter - 2 * (G - 1) * self.alpha_intra
        cost = (G - 1) * self.beta_intra * (2 - 1 / W)
        if gain <= 0:
            return None
        return float("inf") if cost <= 0 else gain / cost

    def to_dict(self) -> dict:
        return asdict(self)


def fit(rows: list[dict]) -> tuple[CostModel, list[dict]]:
    """Least squares on relative error (timings span orders of magnitude) over rows with keys op, N, G,
    bytes, link, seconds. Unknowns: α_a, β_a, α_e and one β_e per link. Returns the model and each row's
    prediction and relative residual."""
    if not rows:
        raise ValueError("no timings to fit")
    links = sorted({r["link"] for r in rows})
    A, y = [], []
    for r in rows:
        ka, ba, ke, be = features(r["op"], r["N"], r["G"], r["bytes"])
        a = [ka, ba, ke] + [be if r["link"] == link else 0.0 for link in links]
        A.append(np.array(a) / r["seconds"])
        y.append(1.0)
    A = np.array(A)
    scale = np.abs(A).max(0)
    scale[scale == 0] = 1.0
    from scipy.optimize import nnls  # times are sums of non-negative costs

    sol, _ = nnls(A / scale, np.array(y))
    sol = sol / scale
    model = CostModel(float(sol[0]), float(sol[1]), float(sol[2]), {link: float(b) for link, b in zip(links, sol[3:])})
    fitted = [{**r, "predicted": model.predict(r["op"], r["N"], r["G"], r["bytes"], r["link"]),
               "rel_residual": model.predict(r["op"], r["N"], r["G"], r["bytes"], r["link"]) / r["seconds"] - 1}
              for r in rows]
    return model, fitted
