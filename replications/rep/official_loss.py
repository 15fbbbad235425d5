"""The suite's TransE / RotatE scores and training loss against the official code's on one identical batch.

    python -m replications.rep.official_loss --code DIR [--out results/rep/official_loss_check.json]

DIR: the base-model code REP's README names (DeepGraphLearning/KnowledgeGraphEmbedding), a checkout or a bare git
dir holding commit COMMIT; its ``codes/model.py`` and ``codes/dataloader.py`` are imported unchanged (their git
blob ids are checked against the pinned commit's). Runs in the suite's .venv, not the official venv: the suite's
package needs hydra/omegaconf at import, and both venvs hold torch 2.13.0 (the record lists the versions).

Per (dataset, model) of the RotatE-repo recipe (conf/model/rep_<model>.yaml: dim, gamma, negatives, adversarial
temperature; the batch is cut to BATCH positives so the check takes seconds):

1. the official ``KGEModel`` is built with its own initialisation (torch seed SEED); the suite's ``KGE`` (L1
   distance, the recipe's) gets a copy of the same entity and relation tables;
2. the batch is the one the suite's ``train.fit`` draws with seed SEED: step 0 corrupts tails, step 1 heads, each
   with K negatives shared by its positives. The official side gets the same positives and, for every positive,
   the same K negatives (its own sampler draws per positive and filters true triples: see ``scheme`` below);
3. positive and negative scores: official ``forward`` against the suite's ``context`` / ``match_pairs`` / ``match``;
4. loss: ``train.fit`` itself run for those two steps (learning rate 1e-30: the parameters do not move, checked)
   against the official ``train_step`` on the same batch, once with the official subsampling weights
   (``TrainDataset.count_frequency``) and once with the suite's (``train.subsampling_weights``): the second
   isolates the loss formula, the first adds the weighting.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import importlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import torch
import yaml

from replications.rep.data import KG, load
from replications.rep.models import KGE, context
from replications.rep.train import fit, subsampling_weights
from shared.atomic import write_json_atomic
from shared.paths import CONF_DIR, REPO_ROOT
from shared.runinfo import environment, portable_paths

REPOSITORY = "https://github.com/DeepGraphLearning/KnowledgeGraphEmbedding"
COMMIT = "2e440e0f9c687314d5ff67ead68ce985dc446e3a"
BLOBS = {"codes/model.py": "2459e71a8aedde1415b3fb703f3c784a4b15e8c8",  # git rev-parse COMMIT:<path>
         "codes/dataloader.py": "ed3f34926e1f24aa80730ddf9a9edbb9c6639a3b"}
OFFICIAL_NAME = {"transe": "TransE", "rotate": "RotatE"}
SUITE_FILES = ("replications/rep/models.py", "replications/rep/l1score.py", "replications/rep/train.py")
CASES = (("fb15k_237", "transe"), ("fb15k_237", "rotate"), ("wn18rr", "transe"), ("wn18rr", "rotate"))
SEED = 1
BATCH = 64
TINY_LR = 1e-30  # SparseAdam refuses lr=0; an Adam step of this size leaves float32 parameters unchanged
SCORE_TOL = 1e-4  # absolute, on scores of size ~gamma (L1 sums over up to 1000 coordinates in float32)
LOSS_TOL = 1e-5


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def official_modules(code: Path, workdir: Path) -> tuple[ModuleType, ModuleType]:
    """model.py and dataloader.py at COMMIT, from a checkout or a bare git dir, blob ids checked; imported."""
    codes = workdir / "codes"
    codes.mkdir()
    for rel, blob in BLOBS.items():
        if (code / rel).exists():
            data = (code / rel).read_bytes()
        else:
            done = subprocess.run(["git", "--git-dir", str(code), "show", f"{COMMIT}:{rel}"], capture_output=True)
            if done.returncode != 0:
                sys.exit(f"error: {code} is neither a checkout with {rel} nor a git dir holding {COMMIT[:12]}; "
                         f"pass --code <checkout or bare clone of {REPOSITORY}>")
            data = done.stdout
        if git_blob_id(data) != blob:
            sys.exit(f"error: {code}/{rel} is not the file of commit {COMMIT[:12]} (blob {git_blob_id(data)[:12]}, "
                     f"expected {blob[:12]}); check out that commit unchanged")
        (workdir / rel).write_bytes(data)
    sys.path.insert(0, str(codes))
    return importlib.import_module("model"), importlib.import_module("dataloader")


def recipe(dataset: str, model: str) -> dict[str, Any]:
    return yaml.safe_load((CONF_DIR / "model" / f"rep_{model}.yaml").read_text())["per_dataset"][dataset]


def suite_batches(n_train: int, n_ent: int, negatives: int) -> list[tuple[torch.Tensor, torch.Tensor, int]]:
    """(row indices, shared negatives, direction) of train.fit's first two steps with seed SEED (its draws, in order)."""
    gen = torch.Generator().manual_seed(SEED)
    perm = torch.randperm(n_train, generator=gen)
    return [(perm[i * BATCH:(i + 1) * BATCH], torch.randint(n_ent, (negatives,), generator=gen), d)
            for i, d in enumerate((1, -1))]


def official_weights(dataloader: ModuleType, train: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """TrainDataset.__getitem__'s subsampling weight of each row, from its own count_frequency."""
    count = dataloader.TrainDataset.count_frequency([tuple(t) for t in train.tolist()])
    return torch.cat([torch.sqrt(1 / torch.Tensor([count[(h, r)] + count[(t, -r - 1)]]))
                      for h, r, t in train[rows].tolist()])


def official_loss(model_cls: type, official: torch.nn.Module, batch: tuple, temperature: float) -> float:
    """KGEModel.train_step on exactly this batch (a one-item iterator), parameters left unchanged (lr 0)."""
    args = SimpleNamespace(cuda=False, negative_adversarial_sampling=True, adversarial_temperature=temperature,
                           uni_weight=False, regularization=0.0)
    net = copy.deepcopy(official)
    log = model_cls.train_step(net, torch.optim.Adam(net.parameters(), lr=0.0), iter([batch]), args)
    return float(log["loss"])


def max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).abs().max())


def true_fraction(kg: KG, rows: torch.Tensor, negatives: torch.Tensor, direction: int) -> float:
    """Share of (positive, shared negative) pairs that are training triples: the pairs the official sampler rejects."""
    train = {tuple(t) for t in kg.train.tolist()}
    hits = 0
    for h, r, t in kg.train[rows].tolist():
        for e in negatives.tolist():
            hits += ((h, r, e) if direction == 1 else (e, r, t)) in train
    return hits / (len(rows) * len(negatives))


def check(kg: KG, kind: str, model_mod: ModuleType, dataloader: ModuleType) -> dict[str, Any]:
    hp = recipe(kg.name, kind)
    dim, gamma, k, temp = int(hp["dim"]), float(hp["gamma"]), int(hp["negatives"]), float(hp["adversarial_temperature"])
    torch.manual_seed(SEED)
    official = model_mod.KGEModel(OFFICIAL_NAME[kind], kg.num_entities, kg.num_relations,
                                  dim // 2 if kind == "rotate" else dim, gamma, double_entity_embedding=kind == "rotate")
    suite = KGE(kind, kg.num_entities, kg.num_relations, dim, gamma, distance="l1")
    with torch.no_grad():
        suite.entity.copy_(official.entity_embedding)
        suite.relation.copy_(official.relation_embedding)
    out: dict[str, Any] = {"dataset": kg.name, "model": kind, "dim": dim, "gamma": gamma, "negatives": k,
                           "adversarial_temperature": temp, "batch": BATCH,
                           "embedding_range": {"official": float(official.embedding_range.item()),
                                               "suite": suite.embedding_range}}
    suite_w = subsampling_weights(kg.train)
    steps = []
    for rows, neg, direction in suite_batches(len(kg.train), kg.num_entities, k):
        mode = "tail-batch" if direction == 1 else "head-batch"
        pos = kg.train[rows]
        neg_rows = neg.expand(len(rows), k).contiguous()
        with torch.no_grad():
            anchor, target = (pos[:, 0], pos[:, 2]) if direction == 1 else (pos[:, 2], pos[:, 0])
            q = context(kind, suite.entity[anchor], suite.relation[pos[:, 1]], direction, suite.embedding_range)
            ours_pos, ours_neg = suite.match_pairs(q, suite.entity[target]), suite.match(q, suite.entity[neg])
            theirs_pos, theirs_neg = official(pos).squeeze(1), official((pos, neg_rows), mode=mode)
        w_off = official_weights(dataloader, kg.train, rows)
        steps.append({
            "mode": mode,
            "max_abs_diff_positive_score": max_diff(ours_pos, theirs_pos),
            "max_abs_diff_negative_score": max_diff(ours_neg, theirs_neg),
            "official_loss_official_weights": official_loss(model_mod.KGEModel, official, (pos, neg_rows, w_off, mode), temp),
            "official_loss_suite_weights": official_loss(model_mod.KGEModel, official,
                                                         (pos, neg_rows, suite_w[rows], mode), temp),
            "max_relative_diff_weights": float(((suite_w[rows] - w_off) / w_off).abs().max()),
            "shared_negatives_that_are_train_triples": true_fraction(kg, rows, neg, direction)})
    # The suite's loss: train.fit itself, two steps of the same draws, on a copy (its optimiser must not move it).
    losses: list[float] = []
    net = copy.deepcopy(suite)
    fit(net, kg.train, SimpleNamespace(lr=TINY_LR, lr_decay_at=None, batch_size=BATCH, negatives=k,
                                       adversarial_temperature=temp, regularization=0.0), steps=2, seed=SEED,
        log=lambda m, s: losses.append(float(m["train_loss"])), log_every=1)
    out["parameters_unchanged_by_fit"] = bool(torch.equal(net.entity, suite.entity) and torch.equal(net.relation, suite.relation))
    for step, loss in zip(steps, losses):
        step["suite_loss"] = loss
        step["diff_suite_vs_official_same_weights"] = loss - step["official_loss_suite_weights"]
        step["diff_suite_vs_official_official_weights"] = loss - step["official_loss_official_weights"]
    out["steps"] = steps
    out["scores_agree"] = all(s["max_abs_diff_positive_score"] <= SCORE_TOL and s["max_abs_diff_negative_score"] <= SCORE_TOL
                              for s in steps)
    out["loss_formula_agrees"] = all(abs(s["diff_suite_vs_official_same_weights"]) <= LOSS_TOL for s in steps)
    out["loss_agrees_with_official_weights"] = all(abs(s["diff_suite_vs_official_official_weights"]) <= LOSS_TOL for s in steps)
    return out


SCHEME = {
    "official": "per positive, its own K entities drawn uniformly (numpy, in the DataLoader worker), those forming a "
                "training triple with the positive's (h, r) or (r, t) rejected and redrawn (dataloader.py TrainDataset); "
                "subsampling weight 1/sqrt(count(h, r) + count(t, r^-1)) with each count starting at 4 for the first "
                "occurrence, i.e. 1/sqrt(6 + #(h, r) + #(t, r^-1)); dense Adam over both tables; at max_steps/2 the lr "
                "drops 10x and a fresh Adam (moments reset) is built",
    "suite": "K entities drawn uniformly once per batch and shared by all its positives (DGL-KE / Graph4KG chunk "
             "sampling, train.fit), no rejection of true triples; weight 1/sqrt(6 + #(h, r) + #(t, r^-1)) (the official "
             "one); SparseAdam "
             "(entities) + Adam (relations); at lr_decay_at the lr drops 10x, moments kept",
    "meaning": "The scores and the loss formula are the official ones. The sampling differs: shared negatives make "
               "the K negative scores of a batch one (B x K) distance product instead of B x K independent draws, so a "
               "batch's negatives are correlated (one unlucky or easy draw affects every positive of the batch) while "
               "each step stays an unbiased uniform-negative estimate; the unfiltered negatives include a few true "
               "triples (the share measured per step above), which the loss then pushes down as false negatives.",
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--code", type=Path, required=True, help=f"checkout or bare git dir of {REPOSITORY} holding {COMMIT[:12]}")
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "results" / "rep" / "official_loss_check.json")
    ap.add_argument("--cases", default=",".join(f"{d}/{m}" for d, m in CASES), help="dataset/model,... (default: all four)")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    cases = [tuple(c.split("/")) for c in args.cases.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        model_mod, dataloader = official_modules(args.code, Path(tmp))
        graphs = {d: load(d) for d in dict.fromkeys(d for d, _ in cases)}
        results = [check(graphs[d], m, model_mod, dataloader) for d, m in cases]
    env = environment()
    # The suite's files that ran, by git blob id: the working tree may hold edits not yet committed (git_dirty).
    suite_files = {rel: git_blob_id((REPO_ROOT / rel).read_bytes()) for rel in SUITE_FILES}
    env["command"] = "python -m replications.rep.official_loss --code <checkout of the official repository>" + (
        f" --cases {args.cases}" if argv and "--cases" in argv else "")
    what = "scores and loss of the suite's TransE/RotatE vs the official code on one identical batch"
    record = {"kind": "authors_code_run", "what": what,
              "repository": REPOSITORY, "commit": COMMIT, "files": BLOBS, "patches": [], "suite_files": suite_files, "seed": SEED,
              "tolerances": {"score_abs": SCORE_TOL, "loss_abs": LOSS_TOL}, "cases": results, "scheme": SCHEME,
              "environment": env, "wall_seconds": round(time.perf_counter() - started, 2)}
    write_json_atomic(args.out, record)
    for r in results:
        print(f"{r['dataset']}/{r['model']}: scores agree {r['scores_agree']}, loss formula agrees {r['loss_formula_agrees']}, "
              f"with official weights {r['loss_agrees_with_official_weights']}; "
              + "; ".join(f"{s['mode']} suite {s['suite_loss']:.6f} official {s['official_loss_official_weights']:.6f}"
                          for s in r["steps"]))
    print(f"wrote {portable_paths(str(args.out))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
