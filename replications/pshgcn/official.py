"""PSHGCN's official code (ivam-he/PSHGCN hgb/main.py) run by `make official-pshgcn`: data layout in, metrics out.

hgb/main.py reads ``config.yaml`` and ``./data/<DBLP|ACM|IMDB|AMiner>/`` relative to its working directory, so
prepare() makes ``data_dir`` that working directory: the suite's sha256-checked HGB files under data/<name>/ and
a link to the checkout's own hgb/config.yaml (the official hyperparameters, unchanged). The command in paper.yaml
changes into data_dir and runs the checkout's hgb/main.py from there, so the checkout itself is never written to.

main.py prints, per seed, ``Best epoch:E | Test Micro: 0.xxxx | Test Macro: 0.xxxx`` (fractions, 4 decimals) and
at the end ``Micro mean = xx.xxxx ± s  Macro mean =  xx.xxxx ± s`` (percent, 4 decimals; with one seed the mean
is that seed). parse() takes the more precise percent line and checks it against the per-seed line.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from shared.data import DataError
from shared.data.hgb import HGB_DATASETS, hgb_files
from shared.official import OfficialParseError

# What hgb/dataset_loader.py reads (info.dat / meta.dat are not read).
HGB_FILES = ("node.dat", "link.dat", "label.dat", "label.dat.test")

_BEST = re.compile(r"Best epoch:(\d+) \| Test Micro: ([0-9.]+) \| Test Macro: ([0-9.]+)")
_MEAN = re.compile(r"Micro mean = ([0-9.]+) ± ([0-9.]+)\s+Macro mean =\s+([0-9.]+) ± ([0-9.]+)")
_RUNS = re.compile(r"SHGCN on dataset (\S+), in (\d+) repeated experiment")
_SEED = re.compile(r"^Namespace\(.*\bseed=(\d+)\b", re.MULTILINE)
# The percent line has 4 decimals, the fraction line 4 decimals of a fraction (2 of percent): half a unit of
# the coarser one, plus float slack.
_AGREE = 0.005 + 1e-6


def official_name(dataset: str) -> str:
    """The folder/--dataset name hgb/main.py uses for a suite dataset name (dblp -> DBLP, aminer -> AMiner)."""
    if dataset not in HGB_DATASETS:
        raise DataError(f"pshgcn official: no HGB dataset '{dataset}'; valid: {', '.join(HGB_DATASETS)}")
    return HGB_DATASETS[dataset].folder


def write_layout(source: Path, name: str, data_dir: Path, checkout: Path) -> None:
    """Lay out `data_dir` as hgb/main.py's working directory: data/<name>/*.dat from `source`, config.yaml."""
    config = checkout / "hgb" / "config.yaml"
    if not config.is_file() or not (checkout / "hgb" / "main.py").is_file():
        raise DataError(f"pshgcn official: {checkout} has no hgb/main.py and hgb/config.yaml; "
                        "fix: point OFFICIAL_CODE_DIR at a checkout of ivam-he/PSHGCN")
    missing = [f for f in HGB_FILES if not (source / f).is_file()]
    if missing:
        raise DataError(f"pshgcn official: {source} lacks {', '.join(missing)}; fix: re-fetch the dataset")
    target = data_dir / "data" / name
    target.mkdir(parents=True, exist_ok=True)
    for f in HGB_FILES:
        shutil.copyfile(source / f, target / f)
    link = data_dir / "config.yaml"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(config.resolve())  # a link, not a copy: the run reads the official file itself


def prepare(dataset: str, data_dir: Path, checkout: Path) -> None:
    """The suite's HGB files for `dataset` (mirror or download, sha256-checked) in hgb/main.py's layout."""
    name = official_name(dataset)
    write_layout(hgb_files(HGB_DATASETS[dataset]), name, data_dir, checkout)


def parse(stdout: str, out_dir: Path, seed: int) -> dict[str, float]:
    """Seed `seed`'s test Micro/Macro-F1 in percent (test scores at the epoch of lowest validation loss)."""
    best = _BEST.findall(stdout)
    if len(best) != 1:
        raise OfficialParseError(f"seed {seed}: expected one 'Best epoch: ... | Test Micro: ... | Test Macro: ...' "
                                 f"line in the official output, found {len(best)}")
    runs = _RUNS.search(stdout)
    mean = _MEAN.search(stdout)
    if runs is None or mean is None:
        raise OfficialParseError(f"seed {seed}: the official output lacks its final 'SHGCN on dataset ...' / "
                                 "'Micro mean = ...' lines (the run did not finish)")
    if runs.group(2) != "1":
        raise OfficialParseError(f"seed {seed}: the official run averaged {runs.group(2)} seeds; expected one "
                                 "(--run 1)")
    stated = _SEED.search(stdout)
    if stated is None or int(stated.group(1)) != seed:
        found = "none" if stated is None else stated.group(1)
        raise OfficialParseError(f"seed {seed}: the official arguments line names seed {found}")
    micro, macro = float(mean.group(1)), float(mean.group(3))
    for label, precise, coarse in (("micro", micro, best[0][1]), ("macro", macro, best[0][2])):
        if abs(precise - 100 * float(coarse)) > _AGREE:
            raise OfficialParseError(f"seed {seed}: test {label} F1 {precise} (mean line) disagrees with "
                                     f"{coarse} (best-epoch line)")
    return {"test_micro_f1": micro, "test_macro_f1": macro}
