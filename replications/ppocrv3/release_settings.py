"""Check each config's detector settings against the release's own inference code.

`python -m replications.ppocrv3.release_settings` fetches the `paddleocr` wheel published with each release
(sha256-pinned, into the cache), reads the argparse defaults of its `tools/infer/utility.py` and the DB
`NormalizeImage` of its `tools/infer/predict_det.py` (parsed with `ast`, never imported: the wheel needs
Paddle), and compares them with conf/model/. It prints one table, writes it to FOLDER/RELEASE_SETTINGS.md
(`--out FOLDER`, default outputs/results/ppocrv3; `--out results/ppocrv3` updates the committed copy) and exits 1
on any mismatch.
"""

from __future__ import annotations

import argparse
import ast
import sys
import zipfile
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from replications.ocr.models import Wheel, wheel_path
from shared.atomic import write_text_atomic
from shared.paths import CONF_DIR, HAND_RUNS

# The PaddleOCR release that shipped each model family (PP-OCRv2: 2.3, Sept 2021; v3: 2.5, May 2022; v4: 2.7, 2023).
RELEASES: dict[str, tuple[Wheel, tuple[str, ...]]] = {
    "v2": (Wheel("paddleocr", "2.3.0.2", "paddleocr-2.3.0.2-py3-none-any.whl",
                 "517af64040e67f2f7a6836176c0e6612eac52d484ba4107cc82eb9449d2d99af"), ("ppocrv3_ppocrv2.yaml",)),
    "v3": (Wheel("paddleocr", "2.5.0.3", "paddleocr-2.5.0.3-py3-none-any.whl",
                 "f2b39527aaf95af6eed4242412cdb8417575b2ee53561016bb3122261ab1daab"), ("ppocrv3/icdar2015.yaml",
                                                                                     "ppocrv3/funsd.yaml")),
    "v4": (Wheel("paddleocr", "2.7.0.3", "paddleocr-2.7.0.3-py3-none-any.whl",
                 "d85cbf75e9aa652fd22f2077b56d1e0dd1a97d09bf317d99f4dbba5c4f1f29ad"), ("ppocrv3_ppocrv4.yaml",)),
}
# argparse option of utility.py -> key of our config
ARGS = {"det_limit_side_len": "det.limit_side_len", "det_limit_type": "det.limit_type",
        "det_db_thresh": "det.thresh", "det_db_box_thresh": "det.box_thresh",
        "det_db_unclip_ratio": "det.unclip_ratio", "use_dilation": "det.use_dilation",
        "det_db_score_mode": "det.score_mode", "drop_score": "text_score"}


def argparse_defaults(source: str) -> dict[str, Any]:
    """`--name` -> literal default of every `*.add_argument("--name", ..., default=<literal>)` in the source."""
    out: dict[str, Any] = {}
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument" and node.args and isinstance(node.args[0], ast.Constant)):
            continue
        for kw in node.keywords:
            if kw.arg == "default":
                try:
                    out[str(node.args[0].value).lstrip("-")] = ast.literal_eval(kw.value)
                except ValueError:  # a computed default (a path); not a setting we compare
                    pass
    return out


def db_normalize(source: str) -> dict[str, list[float]]:
    """mean/std of the first `'NormalizeImage': {...}` literal in predict_det.py (the DB branch's)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == "NormalizeImage" and isinstance(value, ast.Dict):
                    spec = {k.value: v for k, v in zip(value.keys, value.values) if isinstance(k, ast.Constant)}
                    return {"mean": ast.literal_eval(spec["mean"]), "std": ast.literal_eval(spec["std"])}
    raise ValueError("no NormalizeImage literal found in predict_det.py")


def _member(wheel: Path, suffix: str) -> str:
    with zipfile.ZipFile(wheel) as z:
        names = [n for n in z.namelist() if n.endswith(suffix)]
        if len(names) != 1:
            raise ValueError(f"{wheel.name}: expected one member ending in {suffix}, found {names}")
        return z.read(names[0]).decode("utf-8")


def release_values(wheel: Path) -> dict[str, Any]:
    """Our config keys -> the release's value, read from its wheel."""
    defaults = argparse_defaults(_member(wheel, "tools/infer/utility.py"))
    values = {ours: defaults[theirs] for theirs, ours in ARGS.items()}
    norm = db_normalize(_member(wheel, "tools/infer/predict_det.py"))
    values["det.mean"], values["det.std"] = norm["mean"], norm["std"]
    return values


Row = tuple[str, str, str, Any, Any, bool]  # version, config, setting, ours, release's, same


def compare(version: str, wheel: Path, config: Path) -> list[Row]:
    cfg = OmegaConf.load(config)
    rows = []
    for key, theirs in release_values(wheel).items():
        ours = OmegaConf.select(cfg, key)
        ours = OmegaConf.to_container(ours) if OmegaConf.is_config(ours) else ours
        same = ours == theirs or (isinstance(ours, float | int) and isinstance(theirs, float | int)
                                  and float(ours) == float(theirs))
        rows.append((version, config.name if config.parent.name == "model" else f"{config.parent.name}/{config.name}",
                     key, ours, theirs, same))
    return rows


def table(rows: list[Row]) -> str:
    lines = ["# PP-OCR detector settings: ours vs each release's inference code", "",
             "Written by `python -m replications.ppocrv3.release_settings`: the defaults of `tools/infer/utility.py`",
             "and the DB `NormalizeImage` of `tools/infer/predict_det.py`, read from the `paddleocr` wheel published",
             "with each model release (sha256-pinned), against `conf/model/`.", "",
             "| release (paddleocr wheel) | config | setting | ours | release default | same |",
             "|---|---|---|---|---|---|"]
    for version, config, key, ours, theirs, same in rows:
        lines.append(f"| {version} ({RELEASES[version][0].version}) | {config} | {key} | {ours} | {theirs} | "
                     f"{'yes' if same else '**NO**'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=HAND_RUNS / "ppocrv3", help="folder for RELEASE_SETTINGS.md")
    args = parser.parse_args(argv)
    rows = []
    for version, (wheel, configs) in RELEASES.items():
        for config in configs:
            rows += compare(version, wheel_path(wheel), CONF_DIR / "model" / config)
    text = table(rows)
    print(text)
    write_text_atomic(args.out / "RELEASE_SETTINGS.md", text)
    return 0 if all(r[-1] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
