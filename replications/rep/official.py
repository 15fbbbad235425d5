"""REP's base-model code (DeepGraphLearning/KnowledgeGraphEmbedding, ``codes/run.py`` at the commit of paper.yaml
`official:`) on the suite's FB15k-237 / WN18RR: the adapter shared.official calls (prepare, parse).

prepare() writes, under data_dir, what run.py reads from --data_path: ``entities.dict`` and ``relations.dict``
(``id<TAB>name`` lines) and ``train.txt`` / ``valid.txt`` / ``test.txt`` (``head<TAB>relation<TAB>tail`` names).
The triples are the suite's own files (replications.rep.data: the mirror's sha256-pinned copies), and the ids are
the suite's (order of first appearance over train, valid, test), checked against replications.rep.data's parse:
entity i of the official run is entity i of the suite, so embeddings and batches carry over unchanged
(replications/rep/official_loss.py relies on it).

parse() reads run.py's log lines ``<Mode> <metric> at step <s>: <value>`` (logging to stderr, which the runner
keeps with stdout): the last "Training average" line's losses, and the Valid / Test metrics when the command
evaluated (MRR, MR, HITS@k, as fractions and a mean rank, the units of the suite's records).
"""

from __future__ import annotations

import re
from pathlib import Path

from replications.rep import data as kgdata
from shared.data import DataError, fetch
from shared.official import OfficialParseError

DATASETS = ("fb15k_237", "wn18rr")
# run.py's log_metrics: logging.info('%s %s at step %d: %f' % (mode, metric, step, value)).
LINE = re.compile(r"(Training average|Valid|Test) (\S+) at step (\d+): (-?[0-9.]+(?:e-?\d+)?|nan|inf)")
EVAL = {"MRR": "mrr", "MR": "mr", "HITS@1": "hits1", "HITS@3": "hits3", "HITS@10": "hits10"}
SPLIT = {"Valid": "val", "Test": "test"}
# train_step's log keys -> the suite's names (the loss is train.fit's train_loss; both halves kept).
TRAIN = {"loss": "train_loss", "positive_sample_loss": "train_positive_loss",
         "negative_sample_loss": "train_negative_loss", "regularization": "train_regularization"}


def write_official_layout(paths: dict[str, Path], data_dir: Path) -> tuple[dict[str, int], dict[str, int]]:
    """Write the five files of run.py's --data_path; returns (entity ids, relation ids), the suite's."""
    splits = {s: kgdata.read_split(paths[s]) for s in kgdata.SPLITS}
    ent: dict[str, int] = {}
    rel: dict[str, int] = {}
    for rows in splits.values():
        for h, r, t in rows:
            ent.setdefault(h, len(ent))
            rel.setdefault(r, len(rel))
            ent.setdefault(t, len(ent))
    # Why check: the official ids must be the suite's ids, or a batch copied across would mean other triples.
    suite, n_ent, n_rel = kgdata.parse_triples(paths)
    if (n_ent, n_rel) != (len(ent), len(rel)):
        raise DataError(f"entity/relation counts differ from replications.rep.data ({len(ent)}/{len(rel)} vs "
                        f"{n_ent}/{n_rel}); the adapter and the suite's parser disagree")
    for split, rows in splits.items():
        ids = [(ent[h], rel[r], ent[t]) for h, r, t in rows]
        if suite[split].tolist() != [list(x) for x in ids]:
            raise DataError(f"{split}: ids differ from replications.rep.data's; the adapter and the suite's parser disagree")
    for name, table in (("entities.dict", ent), ("relations.dict", rel)):
        (data_dir / name).write_text("".join(f"{i}\t{key}\n" for key, i in table.items()))
    for split, rows in splits.items():
        (data_dir / f"{split}.txt").write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in rows))
    return ent, rel


def prepare(dataset: str, data_dir: Path, checkout: Path) -> None:
    if dataset not in DATASETS:
        raise DataError(f"REP's official adapter writes {', '.join(DATASETS)}, not '{dataset}'")
    files = fetch(kgdata.SPECS[dataset])
    write_official_layout({s: files[f"raw/{s}.txt"] for s in kgdata.SPLITS}, data_dir)


def parse(stdout: str, out_dir: Path, seed: int) -> dict[str, float]:
    """The last training-average losses and any Valid/Test metrics run.py logged (later lines win)."""
    metrics: dict[str, float] = {}
    last_train_step = -1
    for mode, name, step, value in LINE.findall(stdout):
        if mode == "Training average":
            if name not in TRAIN:
                continue
            if int(step) > last_train_step:  # a new window: drop the keys of the older one
                last_train_step = int(step)
                metrics = {k: v for k, v in metrics.items() if not k.startswith("train_")}
            metrics[TRAIN[name]] = float(value)
        elif name in EVAL:
            metrics[f"{SPLIT[mode]}_{EVAL[name]}_base"] = float(value)
    if not metrics:
        raise OfficialParseError("no 'Training average ...', 'Valid ...' or 'Test ... at step N: value' line in run.py's log")
    if last_train_step >= 0:
        metrics["train_last_logged_step"] = float(last_train_step)
    return metrics
