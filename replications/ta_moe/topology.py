"""The topology matrix of TA-MoE's loss, derived from link bandwidths of an emulated cluster.

The official code reads a W x W matrix T from `--topo_file` (np.loadtxt) and never says how it is made. Our
derivation (stated, not the paper's): sending one token from rank i to rank j costs time proportional to
1 / B_ij, so the loss should weigh destination j by that cost. The code weighs it by softmax(T[i])_j * W^2,
hence T_ij = -log(B_ij / max B): softmax(T[i])_j = (1 / B_ij) / sum_k (1 / B_ik), the share of rank i's
per-token transfer cost that goes to j. A rank's own experts (no transfer) count as an intra-node link: a
zero cost would make sending to oneself free and the loss unbounded below in that direction.
B_ij: intra-node bandwidth within a node (ranks share its loopback), the node's NIC rate between nodes.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any


def node_of(rank: int, ranks_per_node: int) -> int:
    return rank // ranks_per_node


def bandwidth_matrix(nodes: int, ranks_per_node: int, intra_mbit: float, inter_mbit: float) -> list[list[float]]:
    """B[i][j] in Mbit/s: intra_mbit within a node (and i == j), inter_mbit across nodes."""
    if nodes < 1 or ranks_per_node < 1 or intra_mbit <= 0 or inter_mbit <= 0:
        raise ValueError(f"need nodes, ranks_per_node >= 1 and positive bandwidths; got {nodes}, {ranks_per_node}, "
                         f"{intra_mbit}, {inter_mbit}")
    W = nodes * ranks_per_node
    return [[intra_mbit if node_of(i, ranks_per_node) == node_of(j, ranks_per_node) else inter_mbit
             for j in range(W)] for i in range(W)]


def topology_from_bandwidth(B: list[list[float]]) -> list[list[float]]:
    """T_ij = -log(B_ij / max B), so that softmax(T[i]) is proportional to 1 / B_ij."""
    top = max(max(row) for row in B)
    return [[-math.log(b / top) for b in row] for row in B]


def measured_bandwidths(path: Path) -> dict[str, Any] | None:
    """{intra_mbit, inter_mbit, source} from a committed comm benchmark, None when it is not there.
    Expected field: `measured_mbit: {intra, inter}` (results/ta_moe/links.json, written by
    `python -m replications.ta_moe.replay --measure-only`)."""
    if not path.exists():
        return None
    record = json.loads(path.read_text())
    measured = record.get("measured_mbit") or {}
    if not {"intra", "inter"} <= set(measured):
        return None
    return {"intra_mbit": float(measured["intra"]), "inter_mbit": float(measured["inter"]),
            "source": f"measured: {path.name}"}


def resolve(cluster: dict[str, Any], root: Path) -> dict[str, Any]:
    """The bandwidths the run uses: measured ones when `cluster.bandwidth_file` exists with them, else the
    config's `intra_mbit` / `inter_mbit` (source "config"); plus B and T."""
    measured = measured_bandwidths(root / cluster["bandwidth_file"]) if cluster.get("bandwidth_file") else None
    bw = measured or {"intra_mbit": float(cluster["intra_mbit"]), "inter_mbit": float(cluster["inter_mbit"]),
                      "source": "config"}
    B = bandwidth_matrix(int(cluster["nodes"]), int(cluster["ranks_per_node"]), bw["intra_mbit"], bw["inter_mbit"])
    return {**bw, "bandwidth_mbit": B, "topology": topology_from_bandwidth(B)}
