"""Detector input per release: PaddleOCR's DetResizeForTest + NormalizeImage, and the configs that choose it."""

from __future__ import annotations

import numpy as np
import pytest
from omegaconf import OmegaConf

from replications.ocr.preprocess import IMAGENET_MEAN, IMAGENET_STD, DetInput
from shared.paths import REPO_ROOT

IMAGENET = DetInput(960, "max", IMAGENET_MEAN, IMAGENET_STD)
PP_CONFIGS = ["ppocrv3/icdar2015", "ppocrv3/funsd", "ppocrv3_ppocrv2", "ppocrv3_ppocrv4"]


def test_max_limit_scales_down_and_rounds_to_32():
    assert IMAGENET.size(720, 1280) == (544, 960)  # IC15: 1280 -> 960, 720 * 0.75 = 540 -> 544
    assert IMAGENET.size(100, 200) == (96, 192)  # small images are not enlarged, only rounded
    assert IMAGENET.size(10, 10) == (32, 32)  # at least 32


def test_min_limit_scales_the_short_side_up():
    assert DetInput(736, "min", IMAGENET_MEAN, IMAGENET_STD).size(720, 1280) == (736, 1312)


def test_normalisation_is_per_bgr_channel_with_imagenet_statistics():
    img = np.zeros((64, 64, 3), np.uint8)
    img[..., 0], img[..., 1], img[..., 2] = 255, 0, 128  # B, G, R as cv2 reads them
    x = IMAGENET(img)
    assert x.shape == (1, 3, 64, 64) and x.dtype == np.float32
    expected = [(1 - 0.485) / 0.229, (0 - 0.456) / 0.224, (128 / 255 - 0.406) / 0.225]
    np.testing.assert_allclose(x[0, :, 5, 5], expected, rtol=1e-5)
    half = DetInput(960, "max", (0.5,) * 3, (0.5,) * 3)(img)  # rapidocr 1.4.4's choice gives other inputs
    assert not np.allclose(half, x)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="limit_type"):
        DetInput(960, "long", IMAGENET_MEAN, IMAGENET_STD)
    with pytest.raises(ValueError, match="per channel"):
        DetInput(960, "max", (0.5,), (0.5,))


@pytest.mark.parametrize("name", PP_CONFIGS)
def test_every_release_is_fed_as_paddleocr_inference_feeds_it(name):
    det = OmegaConf.load(REPO_ROOT / "conf" / "model" / f"{name}.yaml").det
    assert (det.limit_side_len, det.limit_type) == (960, "max")
    assert tuple(det.mean) == IMAGENET_MEAN and tuple(det.std) == IMAGENET_STD
    assert (det.thresh, det.box_thresh, det.unclip_ratio, det.use_dilation) == (0.3, 0.6, 1.5, False)
