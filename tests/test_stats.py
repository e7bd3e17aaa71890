"""Reading five durations (PROTOCOL §6): order statistics, separability, a bounded permutation test."""

from __future__ import annotations

import pytest

from gpucost_mlflow.core.stats import Durations, permutation_p_value, separate

pytestmark = pytest.mark.unit


def test_five_durations_give_median_min_max_and_spread_never_a_p95():
    d = Durations((10.4, 10.1, 10.3, 10.0, 10.2))
    assert (d.median, d.minimum, d.maximum) == (10.2, 10.0, 10.4) and d.spread == pytest.approx(0.4)
    assert not hasattr(d, "p95") and not hasattr(d, "mean")


def test_exact_permutation_test_for_five_against_five():
    assert permutation_p_value([1, 2, 3, 4, 5], [11, 12, 13, 14, 15]) == pytest.approx(2 / 252)


def test_large_samples_fall_back_to_seeded_random_splits():
    first = permutation_p_value([float(i % 7) for i in range(400)], [float(i % 5) for i in range(400)])
    again = permutation_p_value([float(i % 7) for i in range(400)], [float(i % 5) for i in range(400)])
    assert 0.0 <= first <= 1.0 and first == again


def test_difference_inside_the_spread_is_undecided_even_without_overlap():
    result = separate("a", [7.4, 7.7, 7.7, 7.8, 7.5], "b", [7.85, 8.0, 8.04, 7.9, 7.86])
    assert not result.decided and "comparable to the difference" in result.verdict


def test_a_variant_without_completed_pass_is_undecided():
    assert separate("a", [], "b", [1.0]).verdict == "undecided: a has no completed pass"
