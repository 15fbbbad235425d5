"""Bootstrap over images: the interval arithmetic on hand-made per-image counts."""

from __future__ import annotations

import numpy as np
import pytest

from replications.ppocrv3 import bootstrap


def test_hmean_from_counts_matches_the_rrc_formula():
    # 8 care words, 12 detections, 6 matches: P = 0.5, R = 0.75, H = 0.6
    assert bootstrap.hmean(np.array([8, 12, 6, 6]), "e2e_matched") == pytest.approx(60.0)
    assert bootstrap.hmean(np.array([0, 0, 0, 0]), "e2e_matched") == 0.0


def test_identical_images_give_a_zero_width_interval():
    per_image = np.tile([10, 10, 5, 4], (50, 1))
    lo, hi = bootstrap.hmean_ci(per_image, "e2e_matched", samples=500)
    assert lo == pytest.approx(40.0) and hi == pytest.approx(40.0)


def test_interval_covers_the_point_and_narrows_with_more_images():
    rng = np.random.default_rng(0)
    def sample(n):
        k = rng.integers(0, 11, n)
        return np.stack([np.full(n, 10), np.full(n, 10), k, k], axis=1)
    small, large = sample(20), sample(1000)
    for data in (small, large):
        lo, hi = bootstrap.hmean_ci(data, samples=1000)
        assert lo < bootstrap.hmean(data.sum(axis=0), "e2e_matched") < hi
    assert np.subtract(*bootstrap.hmean_ci(large, samples=1000)[::-1]) < \
        np.subtract(*bootstrap.hmean_ci(small, samples=1000)[::-1]) / 3


def test_paired_difference_cancels_image_difficulty():
    # Image difficulty varies wildly, but b always gets exactly one more word than a: pairing sees a sure gain,
    # even though the two engines' own intervals overlap.
    rng = np.random.default_rng(0)
    k = rng.integers(0, 10, 20)
    a = np.stack([np.full(20, 10), np.full(20, 10), k, k], axis=1)
    b = a + [0, 0, 1, 1]
    diff, lo, hi = bootstrap.paired_difference(b, a, samples=1000)
    assert diff == pytest.approx(10.0) and lo == pytest.approx(10.0) and hi == pytest.approx(10.0)
    assert bootstrap.hmean_ci(b, samples=1000)[0] < bootstrap.hmean_ci(a, samples=1000)[1]


def test_paired_difference_needs_the_same_images():
    with pytest.raises(ValueError, match="same images"):
        bootstrap.paired_difference(np.zeros((3, 4)), np.zeros((4, 4)))
