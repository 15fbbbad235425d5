"""The SE-GNN authors' baseline runs, shipped as per-query filtered ranks (renli1024/SE-GNN ``drawing/``).

Each ``<Model>_rank`` pickle maps a test query ``(head, relation, tail, 'head-batch' | 'tail-batch')`` to
the filtered rank the SE-GNN authors' run of that model gave it (GPU, full-size models). Recomputing
MRR / Hits / MR from these files with the suite's own ``summarize`` gives the references in paper.yaml
(kind ``independent_artifacts``) and checks the suite's metric code against an outside source
(tests/test_rep_references.py). The pickles are read with ``shared.safe_pickle`` only.
"""

from __future__ import annotations

from pathlib import Path

import torch

from shared import safe_pickle
from shared.data import DataError, DatasetSpec, RemoteFile
from shared.data.fetch import fetch_file

COMMIT = "1996bd3495c092b5fae13d55979ef758ab2b8535"
RAW = f"https://raw.githubusercontent.com/renli1024/SE-GNN/{COMMIT}/drawing"
# (our dataset, our model) -> file in drawing/, with sha256 and size (mirror SE-GNN-artifacts/SHA256SUMS).
# "DIstMult" keeps the repository's own spelling of the FB15k-237 file.
FILES: dict[tuple[str, str], tuple[str, str, int]] = {
    ("fb15k_237", "transe"): ("FB15k_237/TransE_rank",
        "a39917182fb85d51f6d21fbcae83cd861c75c9f741432768d17e0ae887454a3b", 672350),
    ("fb15k_237", "distmult"): ("FB15k_237/DIstMult_rank",
        "8cbc728d13d56325f74292e5ab790ef301ed9269abd175007d353b6d27129740", 672650),
    ("fb15k_237", "complex"): ("FB15k_237/ComplEx_rank",
        "539babe1c1d9a4b0e908afc0e0227c41c3a212e32a94433f71c7a107170a2832", 672074),
    ("fb15k_237", "rotate"): ("FB15k_237/RotatE_rank",
        "1c8345043817e01d9c64db9a257f485512bd0371ba754df2ada5de3187d5ab25", 672273),
    ("wn18rr", "transe"): ("WN18RR/TransE_rank",
        "807f5fbd5b2c9ce6c11f2ecd3fed611bf8e39084685a5bf357d96555630a79e3", 104733),
    ("wn18rr", "distmult"): ("WN18RR/DistMult_rank",
        "9de46aac34ab2679118bfe6c781e1e243b139c5039bc33a7efe2a0d1842e7585", 105013),
    ("wn18rr", "complex"): ("WN18RR/ComplEx_rank",
        "7b48f7ef8d90f162fd24cab07a73143806e871623bed36d30f227f2083bd1fdd", 105138),
    ("wn18rr", "rotate"): ("WN18RR/RotatE_rank",
        "86c4fcbfc868e7b8d967d82374888aecdea09423776e7258f9c2d2401e4818c0", 104679),
}
SPEC = DatasetSpec("segnn_artifacts", "SE-GNN-artifacts", tuple(
    RemoteFile(name, f"{RAW}/{name}", sha, size) for name, sha, size in FILES.values()),
    note=f"the SE-GNN repository's drawing/ folder at {COMMIT}")
MODES = ("head-batch", "tail-batch")


def rank_file(dataset: str, model: str) -> Path:
    if (dataset, model) not in FILES:
        raise ValueError(f"no SE-GNN rank file for ({dataset}, {model}); valid: {sorted(FILES)}")
    name = FILES[dataset, model][0]
    return fetch_file(SPEC, next(f for f in SPEC.files if f.name == name))


def parse_ranks(table: object, origin: str) -> torch.Tensor:
    """The ranks of a loaded ``*_rank`` table, after checking it is what the release describes."""
    if not isinstance(table, dict) or not table:
        raise DataError(f"{origin}: expected a non-empty dict query -> rank, got {type(table).__name__}")
    for key, rank in table.items():
        if not (isinstance(key, tuple) and len(key) == 4 and key[3] in MODES):
            raise DataError(f"{origin}: query key {key!r} is not (head, relation, tail, 'head-batch'|'tail-batch')")
        if not isinstance(rank, int | float) or rank < 1:
            raise DataError(f"{origin}: rank {rank!r} of {key!r} is not a number >= 1")
    return torch.tensor([float(r) for r in table.values()], dtype=torch.float64)


def load_ranks(dataset: str, model: str) -> torch.Tensor:
    path = rank_file(dataset, model)
    return parse_ranks(safe_pickle.load(path), str(path))
