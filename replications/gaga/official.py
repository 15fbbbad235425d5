"""GAGA's official code (Orion-wyc/GAGA, pytorch_gaga/ at the commit of paper.yaml `official:`) on the suite's
Tolokers: the adapter shared.official calls (prepare, parse).

The official pipeline has three steps, each run unchanged per split by paper.yaml's command: dataset_split.py
(labels and node ids of the split), graph2seq_mp.py (the group aggregation, its per-node loop over DGL graphs)
and main_transformer.py (training with early stopping on validation AUC, then the test metrics). Its loader
knows only DGL's FraudDataset (YelpChi/Amazon): the one patch, official/tolokers.patch, adds a `tolokers` branch
that reads what prepare() writes. Nothing else of the official code is changed.

prepare() writes, under data_dir:
- tolokers.npz: the suite's Tolokers (replications.gaga.data, the mirror's sha256-pinned file) with RAW features
  (the official --norm_feat row-normalises them itself, x / (rowsum + 0.01), as the suite does), 0/1 labels, both
  directions of every edge (the suite's symmetric relation; the official --add_self_loop adds the loops), and
  the 10 official masks, so that official seed i is split i, the suite's seed i;
- tolokers_seed<i>.json per split: main_transformer.py's --config, the official amazon_paper.json keys with the
  suite's Tolokers hyperparameters (conf/model/gaga/tolokers.yaml, conf/paper/gaga.yaml max_epochs), seed = i.

parse() reads the run's printout: the config echo's seed (must be this seed), "Best Epoch E, Val V" and the
final `print(result_list)` ([f1_macro, auc, gmean, precision_1, recall_1, ap, f1_binary_1, f1_binary_0,
recall_macro, best_ep] of the test split at the validation max-F1 threshold), as the suite's percent metrics.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from replications.gaga import data as gdata
from shared.data import DataError
from shared.official import OfficialParseError
from shared.paths import CONF_DIR

# Only name the official files (<dataset>_infos_<train>_<val>_<seed>.npz etc.): the masks come from tolokers.npz.
# paper.yaml's command passes the same values (tests/test_gaga_official.py checks it).
TRAIN_SIZE, VAL_SIZE = 0.5, 0.25
RELATION = "worker-task-worker"
# result_list's order in main_transformer.train()'s return.
RESULT_FIELDS = ("f1_macro", "auc", "gmean", "precision_1", "recall_1", "ap", "f1_binary_1", "f1_binary_0",
                 "recall_macro", "best_ep")


def hyperparameters() -> dict[str, Any]:
    """The suite's GAGA hyperparameters on Tolokers, in the official config's keys (configs/amazon_paper.json)."""
    m = yaml.safe_load((CONF_DIR / "model" / "gaga" / "tolokers.yaml").read_text())
    protocol = yaml.safe_load((CONF_DIR / "paper" / "gaga.yaml").read_text())["protocol"]
    return {"agg_type": "cat", "batch_size": m["batch_size"], "cpu_eval": False, "dataset": "tolokers",
            "dropout": m["dropout"], "emb_dim": m["emb_dim"], "eval_interval": 1, "ff_dim": m["ff_dim"],
            "flush_seconds": 60, "force_reload": False, "grp_norm": False, "lr": m["lr"], "n_heads": m["heads"],
            "n_hops": m["hops"], "n_layers": m["layers"], "norm_feat": True, "max_epochs": protocol["max_epochs"],
            "train_size": TRAIN_SIZE, "val_size": VAL_SIZE, "weight_decay": m["wd"]}


def tolokers_arrays(graph: gdata.FraudGraph) -> dict[str, np.ndarray]:
    """What the patch's tolokers_graph() reads: features, labels, edges both ways, (splits, N) masks."""
    n = graph.x.shape[0]
    adj = graph.relations[RELATION].tocoo()
    masks = {part: np.zeros((len(graph.splits), n), dtype=bool) for part in ("train", "val", "test")}
    for i, split in enumerate(graph.splits):
        for part, idx in zip(masks, split):
            masks[part][i, idx] = True
    return {"features": graph.x, "labels": graph.y.astype(np.int64), "src": adj.row.astype(np.int64),
            "dst": adj.col.astype(np.int64), **{f"{p}_masks": m for p, m in masks.items()}}


def prepare(dataset: str, data_dir: Path, checkout: Path) -> None:
    if dataset != "tolokers":
        raise DataError(f"GAGA's official adapter writes only Tolokers, not '{dataset}' (paper.yaml official.unavailable)")
    graph = gdata.load("tolokers", normalize=False)
    np.savez(data_dir / "tolokers.npz", **tolokers_arrays(graph))
    (data_dir / "seq_data").mkdir()
    config = hyperparameters()
    for i in range(len(graph.splits)):
        seeded = {**config, "base_dir": str(data_dir / "seq_data"), "seed": i}
        (data_dir / f"tolokers_seed{i}.json").write_text(json.dumps(seeded, indent=2, sort_keys=True) + "\n")


def _numbers(line: str) -> list[list[float]]:
    """`print(result_list)`, with numpy 2's np.float64(...) reprs unwrapped."""
    plain = re.sub(r"np\.(?:float|int)\d*\(([^()]*)\)", r"\1", line)
    value = ast.literal_eval(plain)
    if not isinstance(value, list) or not all(isinstance(v, list) for v in value):
        raise ValueError("not a list of lists")
    return value


def parse(stdout: str, out_dir: Path, seed: int) -> dict[str, float]:
    seeds = re.findall(r"^seed\s+(\d+)\s*$", stdout, re.M)
    if seeds != [str(seed)]:
        raise OfficialParseError(f"the config echo names seed(s) {seeds or 'none'}, expected one seed {seed}")
    best = re.findall(r"^Best Epoch (\d+), Val ([0-9.]+)\s*$", stdout, re.M)
    lists = [line for line in stdout.splitlines() if line.startswith("[[")]
    if len(best) != 1 or len(lists) != 1:
        raise OfficialParseError(f"found {len(best)} 'Best Epoch' and {len(lists)} result_list lines, expected one "
                                 "each (did main_transformer.py run with --n_runs 1 and finish?)")
    try:
        (result,) = _numbers(lists[0])
    except (ValueError, SyntaxError) as exc:
        raise OfficialParseError(f"the result_list line cannot be read ({exc}): {lists[0][:120]}") from None
    if len(result) != len(RESULT_FIELDS):
        raise OfficialParseError(f"result_list has {len(result)} values, expected {len(RESULT_FIELDS)}")
    r = dict(zip(RESULT_FIELDS, (float(v) for v in result)))
    if not all(0.0 <= r[k] <= 1.0 for k in ("auc", "ap", "f1_macro")) or int(r["best_ep"]) != int(best[0][0]):
        raise OfficialParseError(f"result_list {result} is not a finished run's (metrics in [0, 1], best epoch "
                                 f"{best[0][0]})")
    return {"test_auc": 100 * r["auc"], "test_ap": 100 * r["ap"], "test_f1_macro": 100 * r["f1_macro"],
            "val_auc": 100 * float(best[0][1]), "best_epoch": r["best_ep"]}
