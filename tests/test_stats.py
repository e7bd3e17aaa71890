"""Reading five durations (PROTOCOL §6): order statistics, separability, a bounded permutation test."""

from __future__ import annotations

import math

import pytest

from gpucost_mlflow.core.measurement.p_values import EXACT_SPLITS_LIMIT, RANDOM_RESAMPLES, permutation_p_value
from gpucost_mlflow.core.measurement.stats import (
    Durations,
    critical_u,
    repetitions_needed,
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


def test_five_passes_all_slower_than_five_others_separate_at_95_percent():
    """Every one of the 25 pairwise differences is positive: the exact Mann-Whitney interval [d(3), d(23)] excludes
    zero, though the median difference (0.2 s) is below the larger min-max spread (0.4 s), which the old rule asked."""
    result = separate("a", [7.4, 7.7, 7.7, 7.8, 7.5], "b", [7.85, 8.0, 8.04, 7.9, 7.86])
    assert result.decided and result.interval == pytest.approx((0.10, 0.54))
    assert result.verdict == ("a faster than b by 0.200 s (median); the 95 % interval of the difference, 0.100 to "
                              "0.540 s, excludes zero")


def test_a_spread_comparable_to_the_difference_does_not_decide_and_more_passes_can_settle_it():
    """The demo's undecided pair (9.28-11.04 s against 9.52-13.05 s): zero inside the interval at five passes; the
    same two populations sampled to the estimated count separate, which a rule on min-max ranges never allows."""
    fast, slow = [9.28, 9.5, 10.0, 10.5, 11.04], [9.52, 10.2, 11.0, 12.0, 13.05]
    result = separate("fast", fast, "slow", slow)
    assert not result.decided and result.verdict.startswith("undecided: the 95 % interval of the difference, -0.840 to "
                                                            "3.050 s, includes zero (median difference 1.000 s")
    needed = repetitions_needed(fast, slow)
    assert needed == 20
    grown = separate("fast", fast * (needed // 5), "slow", slow * (needed // 5))
    assert grown.decided and grown.ranges_overlap  # ranges still overlap: the interval, not the ranges, decides


def with_u(u: int, n: int, m: int) -> tuple[list[float], list[float]]:
    """n and m distinct durations whose Mann-Whitney U (pairs with the first's item above the second's) is exactly u."""
    below = [min(m, max(0, u - m * i)) for i in range(n)]  # how many of the second's items each first item tops
    return [2 * k - 1 + i * 1e-3 for i, k in enumerate(below)], [2.0 * j for j in range(m)]


@pytest.mark.parametrize("n, m, confidence", [(5, 5, 0.95), (8, 8, 0.95), (5, 7, 0.95), (10, 10, 0.90), (6, 9, 0.99)])
def test_the_hodges_lehmann_critical_values_are_scipys_exact_mann_whitney_quantiles(n, m, confidence):
    """c is the largest U whose exact one-sided probability P(U <= c) stays within (1 - confidence) / 2."""
    from scipy.stats import mannwhitneyu

    def p_at_most(u: int) -> float:
        first, second = with_u(u, n, m)
        return mannwhitneyu(first, second, alternative="less", method="exact").pvalue

    c = critical_u(n, m, confidence)
    alpha = (1 - confidence) / 2
    assert p_at_most(c) <= alpha < p_at_most(c + 1)


def test_the_exact_critical_values_are_the_tables_and_two_against_two_never_decide():
    assert (critical_u(5, 5, 0.95), critical_u(8, 8, 0.95), critical_u(30, 30, 0.95)) == (2, 13, 317)
    assert critical_u(2, 2, 0.95) == -1 and separate("a", [1.0, 1.1], "b", [5.0, 5.1]).interval is None
    assert not separate("a", [1.0, 1.1], "b", [5.0, 5.1]).decided


def test_a_variant_without_completed_pass_is_undecided():
    assert separate("a", [], "b", [1.0]).verdict == "undecided: a has no completed pass"


