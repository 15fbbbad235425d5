"""Text regions of one image (polygons + transcriptions), the currency between the OCR engines and any scorer."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

DONT_CARE = "###"  # ICDAR 2015 / RRC: a ground-truth region transcribed "###" is never counted


@dataclass
class Regions:
    """Quadrilaterals (or any polygons) of one image with their transcriptions."""

    polygons: list[np.ndarray]  # each (k, 2) float, k >= 3
    texts: list[str]
    dont_care: list[bool] = field(default_factory=list)

    def __post_init__(self) -> None:
        if len(self.polygons) != len(self.texts):
            raise ValueError(f"{len(self.polygons)} polygons but {len(self.texts)} transcriptions")
        if not self.dont_care:
            self.dont_care = [t == DONT_CARE for t in self.texts]
        if len(self.dont_care) != len(self.texts):
            raise ValueError("dont_care must have one flag per region")
