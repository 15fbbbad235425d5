"""REP's official-code adapter (replications/rep/official.py) and the paper.yaml block, on tiny inputs: no network,
no official checkout, seconds."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from replications.rep import data as kgdata
from replications.rep import official
from replications.rep.official_loss import git_blob_id
from shared.data import DataError
from shared.official import OfficialParseError
from shared.official.spec import load_spec
from shared.paths import CONF_DIR, REPO_ROOT

SPLITS = {  # names chosen so that the order of first appearance is not sorted order
    "train": "zeta\tlikes\talpha\nalpha\tknows\tzeta\nbeta\tlikes\tzeta\n",
    "valid": "gamma\tknows\talpha\n",
    "test": "zeta\tsees\tdelta\n",
}


def raw_files(tmp_path: Path, splits: dict[str, str] = SPLITS) -> dict[str, Path]:
    paths = {}
    for split, text in splits.items():
        paths[split] = tmp_path / f"raw_{split}.txt"
        paths[split].write_text(text)
    return paths


def read_dict(path: Path) -> dict[str, int]:
    """As the official run.py reads entities.dict / relations.dict: `eid<TAB>name` per line."""
    return {name: int(i) for i, name in (line.split("\t") for line in path.read_text().splitlines())}


def test_layout_has_the_suites_ids(tmp_path: Path) -> None:
    out = tmp_path / "data"
    out.mkdir()
    ent, rel = official.write_official_layout(raw_files(tmp_path), out)
    assert ent == {"zeta": 0, "alpha": 1, "beta": 2, "gamma": 3, "delta": 4}  # first appearance, train->valid->test
    assert rel == {"likes": 0, "knows": 1, "sees": 2}
    assert read_dict(out / "entities.dict") == ent and read_dict(out / "relations.dict") == rel
    suite, _, _ = kgdata.parse_triples(raw_files(tmp_path))
    for split in kgdata.SPLITS:  # run.py's read_triple on what we wrote gives the suite's id triples
        ids = [[ent[h], rel[r], ent[t]] for h, r, t in (line.split("\t") for line in
                                                         (out / f"{split}.txt").read_text().splitlines())]
        assert ids == suite[split].tolist()


def test_prepare_reads_the_suites_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = raw_files(tmp_path)
    monkeypatch.setattr(official, "fetch", lambda spec: {f"raw/{s}.txt": p for s, p in paths.items()})
    out = tmp_path / "data"
    out.mkdir()
    official.prepare("wn18rr", out, tmp_path)
    assert sorted(p.name for p in out.iterdir()) == ["entities.dict", "relations.dict", "test.txt", "train.txt", "valid.txt"]
    with pytest.raises(DataError, match="not 'ogbl_wikikg2'"):
        official.prepare("ogbl_wikikg2", out, tmp_path)


def test_a_damaged_split_is_refused(tmp_path: Path) -> None:
    bad = raw_files(tmp_path, {**SPLITS, "valid": "gamma\tknows\n"})
    out = tmp_path / "data"
    out.mkdir()
    with pytest.raises(DataError, match="expected 3 tab-separated fields, got 2"):
        official.write_official_layout(bad, out)


LOG = """\
2026-12-02 16:35:14,342 INFO     learning_rate = 0
2026-12-02 16:36:14,710 INFO     Training average regularization at step 0: 0.500000
2026-12-02 16:36:14,710 INFO     Training average positive_sample_loss at step 0: 0.655133
2026-12-02 16:36:14,710 INFO     Training average loss at step 0: 0.707679
2026-12-02 16:45:55,838 INFO     Change learning_rate to 0.000005 at step 10
2026-12-02 16:45:55,933 INFO     Training average positive_sample_loss at step 10: 0.698024
2026-12-02 16:45:55,934 INFO     Training average negative_sample_loss at step 10: 0.696183
2026-12-02 16:45:55,934 INFO     Training average loss at step 10: 0.697103
2026-12-02 17:00:00,000 INFO     Test MRR at step 20: 0.250000
2026-12-02 17:00:00,000 INFO     Test MR at step 20: 180.500000
2026-12-02 17:00:00,000 INFO     Test HITS@10 at step 20: 0.450000
2026-12-02 17:00:00,000 INFO     Valid MRR at step 20: 0.260000
"""


def test_parse_takes_the_last_training_window_and_the_evaluations() -> None:
    got = official.parse(LOG, Path("."), 1)
    assert got == {"train_positive_loss": 0.698024, "train_negative_loss": 0.696183, "train_loss": 0.697103,
                   "train_last_logged_step": 10.0, "test_mrr_base": 0.25, "test_mr_base": 180.5,
                   "test_hits10_base": 0.45, "val_mrr_base": 0.26}  # step 0's regularization is not carried over


def test_parse_refuses_a_log_without_metrics() -> None:
    with pytest.raises(OfficialParseError, match="no 'Training average"):
        official.parse("Traceback (most recent call last):\nValueError: boom\n", Path("."), 1)


def test_the_short_run_judges_no_suite_row() -> None:
    """The official block's model must not be a suite model: a short run is no reference for converged rows."""
    spec = load_spec("rep")
    suite_models = yaml.safe_load((CONF_DIR / "paper" / "rep.yaml").read_text())["models"]
    assert spec.model not in suite_models and spec.adapter == "replications.rep.official"
    assert set(spec.datasets) == set(official.DATASETS)
    for plan in spec.datasets.values():
        assert "--seed {seed}" in plan.command and "--data_path {data_dir}" in plan.command
        assert "--cuda" not in plan.command


def test_the_patch_only_adds_seeding() -> None:
    (patch,) = load_spec("rep").patches
    lines = (REPO_ROOT / patch).read_text().splitlines()
    assert [line for line in lines if line.startswith("+++ ")] == ["+++ b/codes/run.py"]
    removed = [line for line in lines if line.startswith("-") and not line.startswith("--- ")]
    added = [line for line in lines if line.startswith("+") and not line.startswith("+++ ")]
    assert not removed and any("torch.manual_seed(args.seed)" in line for line in added)


def test_git_blob_id_matches_git() -> None:
    assert git_blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"  # `echo hello | git hash-object --stdin`
