"""Compare the official group aggregation with the suite's, split by split, after `make official-gaga dataset=tolokers`.

The official graph2seq_mp.py leaves its sequences (a float32 memmap per split) and dataset_split.py its node ids in
seq_data/tolokers of the prepared data folder (data/tolokers in the official home, <cache>/official/gaga-<commit>).
This recomputes both with the suite's code (replications.gaga.grouping on the suite's split i) and prints, per split,
whether the node ids are the same and the largest absolute difference of the sequences:

    python -m replications.gaga.official_check [DATA_DIR]

A difference at float32 rounding (~1e-6) means the official preprocessing and the suite's are the same function of
the same split; anything larger, or other node ids, is a finding (exit 1).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from replications.gaga import data as gdata
from replications.gaga.grouping import group_ids, group_sequences
from replications.gaga.official import TRAIN_SIZE, VAL_SIZE
from shared.official.spec import load_spec

TOLERANCE = 1e-5  # float32 means of row-normalised features (< 1): rounding differs in the last bits only


def check(data_dir: Path, hops: int = 2) -> list[dict]:
    graph = gdata.load("tolokers", normalize=True)
    folder = data_dir / "seq_data" / "tolokers"
    out = []
    for i in range(len(graph.splits)):
        seq_file = folder / f"tolokers_no_grp_norm_norm_feat_{hops}_{TRAIN_SIZE}_{VAL_SIZE}_{i}.npy"
        info_file = folder / f"tolokers_infos_{TRAIN_SIZE}_{VAL_SIZE}_{i}.npz"
        if not seq_file.exists() or not info_file.exists():
            out.append({"split": i, "missing": seq_file.name if not seq_file.exists() else info_file.name})
            continue
        train, val, test = graph.split(i)
        with np.load(info_file) as info:
            same_ids = all(np.array_equal(np.sort(info[k]), ids) for k, ids in
                           (("train_nid", train), ("val_nid", val), ("test_nid", test)))
        ours = group_sequences(list(graph.relations.values()), graph.x, group_ids(graph.y, train), hops=hops)
        theirs = np.memmap(seq_file, dtype=np.float32, mode="r", shape=ours.shape)
        out.append({"split": i, "same_node_ids": same_ids, "max_abs_difference": float(np.abs(ours - theirs).max())})
    return out


def main(argv: list[str]) -> int:
    data_dir = Path(argv[0]) if argv else load_spec("gaga").home / "data" / "tolokers"
    rows = check(data_dir)
    for r in rows:
        print(r)
    bad = [r for r in rows if "missing" in r or not r["same_node_ids"] or r["max_abs_difference"] > TOLERANCE]
    print(f"{len(rows) - len(bad)} of {len(rows)} splits: same node ids and sequences within {TOLERANCE:g}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
