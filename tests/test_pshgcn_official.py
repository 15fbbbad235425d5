"""PSHGCN's official-code adapter (replications/pshgcn/official.py) and its paper.yaml block, on tiny inputs.

The official hgb/main.py is not run here (it needs torch_sparse built from source); a stand-in main.py with the
official print statements and file reads checks that paper.yaml's command finds the prepared data_dir and the
checkout's code, and that parse() reads what it prints.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from replications.pshgcn import official
from shared.data import DataError
from shared.official import OfficialParseError
from shared.official.runner import fill

PAPER_YAML = Path(__file__).resolve().parents[1] / "replications" / "pshgcn" / "paper.yaml"
REPO_ROOT = PAPER_YAML.parents[2]

# What hgb/main.py prints for `--dataset IMDB --seed 3 --run 1` (format strings of main.py at f87406c; values
# made up: 0.745123 -> "0.7451" and 74.5123).
ONE_SEED = """Namespace(dataset='IMDB', seed=3, device=0, run=1, epochs=1000, early_stopping=100, emb_dim=128, \
hidden=256, dropout=0.7, input_drop=0.05, K=1, lr=0.0005, wd=0.0005, prop_lr=0.008, prop_wd=0.0)
start training...
Epoch 00000 | train_micro 0.5000 | Train Loss: 0.6931| valid_micro 0.4900 | valid_loss 0.6900 |test_micro: 0.4800
Early_stopping!
Best epoch:25 | Test Micro: 0.7451 | Test Macro: 0.7223
SHGCN on dataset IMDB, in 1 repeated experiment:
Micro mean = 74.5123 ± 0.0000  \t  Macro mean =  72.2288 ± 0.0000
"""


def test_parse_reads_the_precise_percent_line() -> None:
    assert official.parse(ONE_SEED, Path("."), 3) == {"test_micro_f1": 74.5123, "test_macro_f1": 72.2288}


@pytest.mark.parametrize("broken, why", [
    (ONE_SEED.replace("Best epoch:25", "Best epch:25"), "found 0"),
    (ONE_SEED.replace("Best epoch:25 |", "Best epoch:25 | Test Micro: 0.7 | Test Macro: 0.7\nBest epoch:25 |"),
     "found 2"),
    (ONE_SEED.split("SHGCN on dataset")[0], "did not finish"),
    (ONE_SEED.replace("in 1 repeated", "in 5 repeated"), "averaged 5 seeds"),
    (ONE_SEED.replace("seed=3", "seed=1"), "names seed 1"),
    (ONE_SEED.replace("Micro mean = 74.5123", "Micro mean = 74.5623"), "disagrees"),
    (ONE_SEED.replace("Macro mean =  72.2288", "Macro mean =  nan"), "did not finish"),
    ("", "found 0"),
])
def test_parse_refuses_what_is_not_one_finished_seed(broken: str, why: str) -> None:
    with pytest.raises(OfficialParseError, match=why):
        official.parse(broken, Path("."), 3)


def test_official_names_and_unknown_dataset() -> None:
    assert [official.official_name(d) for d in ("dblp", "imdb", "acm", "aminer")] == ["DBLP", "IMDB", "ACM", "AMiner"]
    with pytest.raises(DataError, match="no HGB dataset 'yelp'"):
        official.official_name("yelp")


def _fake_hgb(root: Path) -> Path:
    root.mkdir(parents=True)
    for name in official.HGB_FILES:
        (root / name).write_text(f"{name}\n0\tn0\t0\t1\n")
    return root


def _fake_checkout(root: Path) -> Path:
    """A checkout whose hgb/main.py reads what the official one reads (cwd config.yaml, ./data/<name>/) and
    prints the official lines; it reports the number of label.dat.test lines as its 'Micro' so a wrong data
    folder shows."""
    hgb = root / "hgb"
    hgb.mkdir(parents=True)
    (hgb / "config.yaml").write_text("IMDB:\n  K: 1\n")
    (hgb / "main.py").write_text(
        "import argparse, yaml\n"
        "p = argparse.ArgumentParser(); p.add_argument('--dataset'); p.add_argument('--seed', type=int)\n"
        "p.add_argument('--run', type=int); args = p.parse_args()\n"
        "yaml.safe_load(open('config.yaml'))[args.dataset]\n"
        "n = sum(1 for _ in open(f'./data/{args.dataset}/label.dat.test'))\n"
        "print(args)\n"
        "print(f'Best epoch:7 | Test Micro: {n / 100:.4f} | Test Macro: 0.5000')\n"
        "print(f'SHGCN on dataset {args.dataset}, in {args.run} repeated experiment:')\n"
        "print(f'Micro mean = {n:.4f} ± 0.0000  \\t  Macro mean =  50.0000 ± 0.0000')\n"
    )
    return root


def test_write_layout_makes_the_working_directory(tmp_path: Path) -> None:
    source, checkout = _fake_hgb(tmp_path / "src"), _fake_checkout(tmp_path / "co")
    data_dir = tmp_path / "data_dir"
    official.write_layout(source, "IMDB", data_dir, checkout)
    official.write_layout(source, "IMDB", data_dir, checkout)  # again: the link is replaced, not refused
    for name in official.HGB_FILES:
        assert (data_dir / "data" / "IMDB" / name).read_text() == (source / name).read_text()
    assert (data_dir / "config.yaml").resolve() == (checkout / "hgb" / "config.yaml").resolve()


def test_write_layout_refuses_missing_files(tmp_path: Path) -> None:
    source, checkout = _fake_hgb(tmp_path / "src"), _fake_checkout(tmp_path / "co")
    (source / "label.dat.test").unlink()
    with pytest.raises(DataError, match="lacks label.dat.test"):
        official.write_layout(source, "IMDB", tmp_path / "d", checkout)
    with pytest.raises(DataError, match="has no hgb/main.py"):
        official.write_layout(source, "IMDB", tmp_path / "d", tmp_path / "src")


def _block() -> dict:
    return yaml.safe_load(PAPER_YAML.read_text())["official"]


def test_paper_yaml_command_runs_main_in_the_prepared_directory(tmp_path: Path) -> None:
    source = _fake_hgb(tmp_path / "src")
    (source / "label.dat.test").write_text("".join(f"{i}\tm\t0\t1\n" for i in range(42)))
    checkout, data_dir = _fake_checkout(tmp_path / "co"), tmp_path / "data dir"  # a space, as in some homes
    official.write_layout(source, "IMDB", data_dir, checkout)
    # As shared.official.runner runs it: placeholders filled shell-quoted, through bash, in the checkout.
    line = fill(_block()["datasets"]["imdb"]["command"], python=sys.executable, seed=4, data_dir=data_dir,
                out_dir=tmp_path / "out")
    done = subprocess.run(["bash", "-c", line], cwd=checkout, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert official.parse(done.stdout, tmp_path, 4) == {"test_micro_f1": 42.0, "test_macro_f1": 50.0}


def test_paper_yaml_block_is_complete() -> None:
    block = _block()
    paper = yaml.safe_load(PAPER_YAML.read_text())
    assert block["commit"] == paper["code"]["commit"] and len(block["commit"]) == 40
    assert set(block["datasets"]) | set(block["unavailable"]) == {"dblp", "imdb", "acm", "aminer"}
    assert not set(block["datasets"]) & set(block["unavailable"])
    for name, spec in block["datasets"].items():
        assert spec["seeds"] == [1, 2, 3, 4, 5], name
        assert {"{python}", "{seed}", "{data_dir}"} <= {t for t in spec["command"].split() if t.startswith("{")}
        assert f"--dataset {official.official_name(name)} " in spec["command"]
    assert all("==" in r for r in block["requirements"]) and not any(r.startswith("torch==") for r in
                                                                        block["requirements"])
    assert block["adapter"] == official.__name__


def _changed(patch: str) -> tuple[list[str], str]:
    text = (REPO_ROOT / patch).read_text()
    return [ln for ln in text.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))], text


def test_the_patches_only_move_the_seed_loop_and_pass_the_resolved_device() -> None:
    """Both patches are listed and exist; one changes nothing but main.py's seed loop start, the other only adds
    the line handing processing.py main.py's resolved device (no model, loop or hyperparameter touched)."""
    seed, device = _block()["patches"]
    changed, text = _changed(seed)
    assert changed[0] == "-    for i in range(1,args.run+1):"
    assert changed[1].startswith("+    for i in range(args.seed, args.seed+args.run):")
    assert len(changed) == 2 and "a/hgb/main.py" in text
    changed, text = _changed(device)
    assert len(changed) == 1 and changed[0].startswith("+    args.device = device  #") and "a/hgb/main.py" in text
    listed = {Path(p).name for p in _block()["patches"]}
    assert listed == {p.name for p in (REPO_ROOT / "replications" / "pshgcn" / "official").glob("*.patch")}
