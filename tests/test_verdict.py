"""The one place a status is computed: numbers against a reference, directions against an interval."""

from __future__ import annotations

import math

import pytest

from shared.verdict import (
    CONTRADICTED,
    INCONCLUSIVE,
    NO_REFERENCE,
    NOT_REPRODUCED,
    NOT_RUN,
    REPRODUCED,
    STATUSES,
    SUPPORTED,
    checked,
    direction_status,
    number_status,
    sign_status,
)


def test_number_status_is_judged_within_the_tolerance_both_ways():
    assert number_status(80.4, 80.0, 0.5) == (REPRODUCED, pytest.approx(0.4))
    assert number_status(79.4, 80.0, 0.5) == (NOT_REPRODUCED, pytest.approx(-0.6))
    assert number_status(80.0, None, 0.5) == (NO_REFERENCE, None)
    with pytest.raises(ValueError, match="needs a tolerance"):
        number_status(80.0, 80.0, None)  # a known reference is never shown as "no reference"


@pytest.mark.parametrize(("low", "high", "claimed", "margin", "expected"), [
    (0.1, 0.5, "positive", 0.0, SUPPORTED),
    (-0.5, -0.1, "positive", 0.0, CONTRADICTED),
    (-0.1, 0.5, "positive", 0.0, INCONCLUSIVE),
    (0.1, 0.5, "positive", 0.2, INCONCLUSIVE),  # above zero but not surely above the claimed margin
    (-0.5, -0.1, "negative", 0.0, SUPPORTED),
    (2.8, 58.1, "none", 1.0, CONTRADICTED),  # a loss surely bigger than the margin: "no loss" fails
    (-3.0, 0.5, "none", 1.0, SUPPORTED),
    (-3.0, 2.0, "none", 1.0, INCONCLUSIVE),
    (math.nan, 1.0, "positive", 0.0, INCONCLUSIVE),
])
def test_direction_status_reads_the_whole_interval(low, high, claimed, margin, expected):
    assert direction_status(low, high, claimed=claimed, margin=margin) == expected


def test_sign_status_needs_every_repeat_on_one_side():
    assert sign_status([0.2, 0.1, 0.3]) == SUPPORTED
    assert sign_status([-0.2, -0.1]) == CONTRADICTED
    assert sign_status([0.2, -0.1]) == INCONCLUSIVE
    assert sign_status([0.2, 0.1], claimed="negative") == CONTRADICTED
    assert sign_status([]) == NOT_RUN


def test_the_vocabulary_is_closed():
    assert all(checked(s) == s for s in STATUSES)
    with pytest.raises(ValueError, match="unknown status 'holds'"):
        checked("holds")
    with pytest.raises(ValueError):
        direction_status(0, 1, claimed="sideways")
