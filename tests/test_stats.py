"""Reading five durations (PROTOCOL §6): order statistics, separability, a bounded permutation test."""

from __future__ import annotations

import math

import pytest

from gpucost_mlflow.core.measurement.stats import (
    EXACT_SPLITS_LIMIT,
    RANDOM_RESAMPLES,
    Durations,
    permutation_p_value,
    separate,
)

pytestmark = pytest.mark.unit


def test_five_durations_give_median_min_max_and_spread_never_a_p95():
    d = Durations((10.4, 10.1, 10.3, 10.0, 10.2))
    assert (d.median, d.minimum, d.maximum) == (10.2, 10.0, 10.4) and d.spread == pytest.approx(0.4)
    assert not hasattr(d, "p95") and not hasattr(d, "mean")


def test_exact_permutation_test_for_five_against_five():
    assert permutation_p_value([1, 2, 3, 4, 5], [11, 12, 13, 14, 15]) == pytest.approx(2 / 252)


def test_up_to_200000_splits_every_split_is_counted_and_beyond_9999_seeded_random_ones_are():
    fast, slow = [float(i) for i in range(10)], [100.0 + i for i in range(11)]
    assert math.comb(20, 10) <= EXACT_SPLITS_LIMIT < math.comb(21, 10)
    # 10 + 10: all 184,756 splits; only the observed one and its mirror image are as extreme.
    assert permutation_p_value(fast, slow[:10]) == pytest.approx(2 / math.comb(20, 10))
    # 10 + 11: 352,716 splits, so random ones; none is as extreme, and the observed split counts once on each
    # side among RANDOM_RESAMPLES + 1 (all splits would give 2 / 352,716 instead).
    assert permutation_p_value(fast, slow) == pytest.approx(2 / (RANDOM_RESAMPLES + 1))
    overlapping = [0.5 + i for i in range(11)]
    first = permutation_p_value(fast, overlapping)
    assert 0.05 < first < 1 and permutation_p_value(fast, overlapping) == first  # seeded: the same draw every time


def test_difference_inside_the_spread_is_undecided_even_without_overlap():
    result = separate("a", [7.4, 7.7, 7.7, 7.8, 7.5], "b", [7.85, 8.0, 8.04, 7.9, 7.86])
    assert not result.decided and "comparable to the difference" in result.verdict


def test_a_variant_without_completed_pass_is_undecided():
    assert separate("a", [], "b", [1.0]).verdict == "undecided: a has no completed pass"
