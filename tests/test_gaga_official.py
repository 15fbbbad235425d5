"""GAGA's official-code adapter (replications/gaga/official.py) and paper.yaml's official block, without the official
code (it needs dgl): parse() on printouts in main_transformer.py's format, prepare()'s arrays and configs, and the
block's command against the suite's Tolokers protocol. With the data mirror: official split i is the suite's split i."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import scipy.sparse as sp
import yaml

from replications.gaga import data as gdata
from replications.gaga import official, report
from shared.data import DataError
from shared.official import OfficialParseError
from shared.official.spec import load_spec
from shared.paths import CONF_DIR, REPO_ROOT
from shared.report.paper_hook import load_paper_results
from shared.stats import aggregate
from tests.conftest import needs_mirror

CONFIG_ECHO = "\n".join(["*********** TRAIN CONFIGURATION ***********", "agg_type        cat", "early_stop      30",
                         "seed            {seed}", "train_size      0.5", "*********** TRAIN CONFIGURATION ***********"])
# What main_transformer.py prints at the end of one run (--n_runs 1); numpy 2 shows np.float64(...) reprs.
RESULT = ("[[np.float64(0.6512), np.float64(0.7843), 0.70, 0.40, 0.55, np.float64(0.4721), 0.46, 0.84, 0.66, 69]]\n"
          "f1_macro= 0.6512±nan\n")


def printout(seed: int = 3, best: str = "Best Epoch 69, Val 0.7974") -> str:
    return (CONFIG_ECHO.format(seed=seed) + "\nTrain on epoch    0:\nAVG. loss= 0.7515, Elapsed time=3.57(s)\n"
            f"\n{best}\nbest_roc_thres: 0.3\nbest_pr_thres: 0.4\n" + RESULT)


def test_parse_reads_the_test_metrics_in_percent():
    assert official.parse(printout(), REPO_ROOT, 3) == pytest.approx(
        {"test_auc": 78.43, "test_ap": 47.21, "test_f1_macro": 65.12, "val_auc": 79.74, "best_epoch": 69.0})


@pytest.mark.parametrize("text, words", [
    (printout(seed=4), r"names seed\(s\) \['4'\], expected one seed 3"),
    (printout().replace("Best Epoch 69, Val 0.7974\n", ""), "found 0 'Best Epoch' and 1 result_list"),
    (printout() + RESULT, "found 1 'Best Epoch' and 2 result_list"),
    (printout().replace("[[np.float64(0.6512)", "[[np.float64(0.6512), 0.5"), "has 11 values, expected 10"),
    (printout(best="Best Epoch 70, Val 0.7974"), "not a finished run's"),
    (printout().replace("np.float64(0.7843)", "np.float64(78.43)"), "not a finished run's"),
    (printout().replace("[[np.float64(0.6512)", "[[oops"), "cannot be read"),
    ("", r"names seed\(s\) none"),
])
def test_parse_refuses_what_is_not_one_finished_run_of_this_seed(text, words):
    with pytest.raises(OfficialParseError, match=words):
        official.parse(text, REPO_ROOT, 3)


def toy_graph() -> gdata.FraudGraph:
    adj = gdata.symmetric_binary(sp.coo_matrix((np.ones(3), ([0, 1, 2], [1, 2, 3])), shape=(5, 5)))
    splits = [(np.array([0, 1]), np.array([2]), np.array([3, 4])), (np.array([3, 4]), np.array([0]), np.array([1, 2]))]
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    return gdata.FraudGraph("tolokers", x, np.array([0, 1, 0, 1, 1]), {official.RELATION: adj}, splits)


def test_arrays_hold_both_edge_directions_raw_features_and_every_split_as_masks():
    a = official.tolokers_arrays(toy_graph())
    assert sorted(zip(a["src"].tolist(), a["dst"].tolist())) == [(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2)]
    assert a["features"].tolist() == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]  # raw: --norm_feat is the official's
    assert a["train_masks"].tolist() == [[1, 1, 0, 0, 0], [0, 0, 0, 1, 1]]
    assert a["val_masks"].tolist() == [[0, 0, 1, 0, 0], [1, 0, 0, 0, 0]]
    assert a["test_masks"].tolist() == [[0, 0, 0, 1, 1], [0, 1, 1, 0, 0]]


def test_the_official_config_carries_the_suites_tolokers_hyperparameters():
    h = official.hyperparameters()
    m = yaml.safe_load((CONF_DIR / "model" / "gaga" / "tolokers.yaml").read_text())
    assert (h["emb_dim"], h["ff_dim"], h["n_layers"], h["n_heads"], h["n_hops"], h["dropout"], h["batch_size"], h["lr"],
            h["weight_decay"]) == (m["emb_dim"], m["ff_dim"], m["layers"], m["heads"], m["hops"], m["dropout"],
                                   m["batch_size"], m["lr"], m["wd"])
    assert h["max_epochs"] == 500 and h["norm_feat"] is True and h["grp_norm"] is False and h["agg_type"] == "cat"
    # configs/amazon_paper.json's keys at 85ad1c1, less base_dir and seed (set per split by prepare()).
    assert set(h) == {"agg_type", "batch_size", "cpu_eval", "dataset", "dropout", "emb_dim", "eval_interval", "ff_dim",
                      "flush_seconds", "force_reload", "grp_norm", "lr", "n_heads", "n_hops", "n_layers", "norm_feat",
                      "max_epochs", "train_size", "val_size", "weight_decay"}


def test_the_block_runs_every_split_with_the_suites_patience_and_file_names():
    spec = load_spec("gaga")
    plan = spec.datasets["tolokers"]
    protocol = yaml.safe_load((CONF_DIR / "paper" / "gaga.yaml").read_text())["protocol"]
    patience = yaml.safe_load((CONF_DIR / "dataset" / "tolokers.yaml").read_text())["patience"]
    assert list(plan.seeds) == protocol["seeds"] == list(range(10)) and spec.model == "gaga"
    assert re.findall(r"--early_stop (\d+)", plan.command) == [str(patience)]
    assert re.findall(r"--train_size (\S+)", plan.command) == [str(official.TRAIN_SIZE)] * 2
    assert re.findall(r"--val_size (\S+)", plan.command) == [str(official.VAL_SIZE)] * 2
    assert "--n_runs 1" in plan.command and "--add_self_loop --norm_feat" in plan.command
    assert "tolokers_seed{seed}.json" in plan.command and "--fanouts -1 -1" in plan.command  # 2 hops, full
    assert all((REPO_ROOT / p).exists() for p in spec.patches) and set(spec.unavailable) == {"yelpchi", "amazon"}


def test_prepare_refuses_another_dataset(tmp_path):
    with pytest.raises(DataError, match="only Tolokers"):
        official.prepare("yelpchi", tmp_path, tmp_path)


@needs_mirror
def test_official_split_i_is_the_suites_split_i(tmp_path, module_cache):
    official.prepare("tolokers", tmp_path, tmp_path)
    graph = gdata.load("tolokers", normalize=False)
    with np.load(tmp_path / "tolokers.npz") as d:
        assert d["train_masks"].shape == (10, 11758)
        for i in range(10):
            for part, idx in zip(("train", "val", "test"), graph.split(i)):
                assert np.array_equal(np.nonzero(d[f"{part}_masks"][i])[0], idx)
        assert len(d["src"]) == 2 * 519000 and not np.any(d["src"] == d["dst"])
        assert np.array_equal(d["features"], graph.x)
    config = json.loads((tmp_path / "tolokers_seed7.json").read_text())
    assert config["seed"] == 7 and config["base_dir"] == str(tmp_path / "seq_data")


def suite_record(aucs: list[float], splits: list[int] | None = None) -> dict:
    runs = [{"seed": s, "metrics": {"test_auc": a, "test_ap": 40.0, "test_f1_macro": 60.0},
             "train": {"epochs_run": 100, "best_epoch": 69, "max_epochs": 500, "split": s if splits is None else splits[s]}}
            for s, a in enumerate(aucs)]
    return {"paper": "gaga", "dataset": "tolokers", "model": "gaga", "scale": "full", "complete": True, "runs": runs,
            "aggregate": aggregate([r["metrics"] for r in runs]), "wall_seconds": 60.0,
            "config": {"paper": {"protocol": {"patience": 100, "max_epochs": 500, "step_batch": 256}},
                       "dataset": {"name": "tolokers", "patience": 30}, "model": {"name": "gaga"}}}


def official_record(aucs: list[float]) -> dict:
    runs = [{"seed": s, "metrics": {"test_auc": a, "best_epoch": 50.0}} for s, a in enumerate(aucs)]
    return {"paper": "gaga", "dataset": "tolokers", "model": "gaga", "kind": "authors_code_run", "complete": True,
            "repository": "https://github.com/Orion-wyc/GAGA", "commit": "85ad1c10dd28c59584d346386c255eb1bcd4c22c",
            "patches": [{"path": "replications/gaga/official/tolokers.patch", "sha256": "0" * 64}], "runs": runs,
            "aggregate": aggregate([r["metrics"] for r in runs])}


@pytest.mark.parametrize("suite, splits, status, words", [
    ([80.5, 81.5, 79.2], None, "supported", r"^\+0.4 \[-0.0303, \+0.83\] AUC points \(95% t, n = 3\); gaga - official within ±1"),
    ([83.0, 84.2, 81.8], None, "contradicted", r"^\+3 \[\+2.5, \+3.5\] AUC points"),
    ([80.5, 81.5, 79.2], [0, 2, 1], "not testable here", r"not paired: the suite's seeds \[1, 2\]"),
])
def test_the_page_pairs_the_official_run_split_by_split(tmp_path, suite, splits, status, words):
    folder = tmp_path / "gaga" / "tolokers"
    folder.mkdir(parents=True)
    (folder / "gaga.json").write_text(json.dumps(suite_record(suite, splits)))
    (folder / "official.json").write_text(json.dumps(official_record([80.0, 81.0, 79.0])))
    page = report.build(load_paper_results(tmp_path, "gaga"))
    claims = {c.id: c for c in page.claims}
    claim = claims["matches_official_auc"]
    assert claim.status == status and re.search(words, claim.evidence) and claim.kind == "authors_code_run"
    # no baseline records: not run; no F1-macro in this official record: not run (not paired: not testable)
    assert {i: c.status for i, c in claims.items() if i != "matches_official_auc"} == {
        **dict.fromkeys(["beats_graphsage", "beats_mlp", "beats_bwgnn"], "not run"),
        "matches_official_f1": "not testable here" if splits else "not run"}
    (table,) = [b for b in page.blocks if getattr(b, "header", [None])[0] == "split"]
    assert table.rows[0] == [0, "80.00", f"{suite[0]:.2f}", f"{suite[0] - 80.0:+.2f}", "–", "–", "50", 69]
    assert f"**{status}**" in table.note
    # The gaga row's reference is the official run (authors_code_run), read from official.json in this root.
    (gaga_row,) = [r for r in page.data["datasets"]["tolokers"] if r["model"] == "gaga"]
    assert gaga_row["reference_auc"] == "80.00 ± 1.00 (authors_code_run)"


def test_the_grouping_check_finds_equal_and_corrupted_official_sequences(tmp_path, monkeypatch):
    from replications.gaga import official_check
    from replications.gaga.grouping import group_ids, group_sequences

    graph = toy_graph()  # two splits; the check recomputes the suite's grouping for every split it finds files of
    monkeypatch.setattr(official_check.gdata, "load", lambda name, normalize: graph)
    train, val, test = graph.split(0)
    folder = tmp_path / "seq_data" / "tolokers"
    folder.mkdir(parents=True)
    seq = group_sequences(list(graph.relations.values()), graph.x, group_ids(graph.y, train), hops=2)
    name = f"{official.TRAIN_SIZE}_{official.VAL_SIZE}_0"
    seq.astype(np.float32).tofile(folder / f"tolokers_no_grp_norm_norm_feat_2_{name}.npy")  # a raw memmap, as official
    np.savez(folder / f"tolokers_infos_{name}.npz", train_nid=train, val_nid=val, test_nid=test)
    rows = official_check.check(tmp_path)
    assert rows == [{"split": 0, "same_node_ids": True, "max_abs_difference": 0.0},
                    {"split": 1, "missing": "tolokers_no_grp_norm_norm_feat_2_0.5_0.25_1.npy"}]
    assert official_check.main([str(tmp_path)]) == 1
    (seq + np.float32(0.01)).astype(np.float32).tofile(folder / f"tolokers_no_grp_norm_norm_feat_2_{name}.npy")
    np.savez(folder / f"tolokers_infos_{name}.npz", train_nid=val, val_nid=train, test_nid=test)
    (row, _) = official_check.check(tmp_path)
    assert row["max_abs_difference"] == pytest.approx(0.01, rel=1e-3) and row["same_node_ids"] is False
