"""Reading five durations: raw values, median, min, max, counts; separability of two variants.

No p95 and no bare mean from five passes; a difference smaller than the spread does not decide.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

UNDECIDED_ADVICE = (
    "add repetitions under the same protocol, or look for a cause (loading, input shapes, compilation, "
    "concurrent activity)"
)


@dataclass(frozen=True)
class Durations:
    """The raw durations of the completed passes of one variant on one device, and their order statistics."""

    values: tuple[float, ...]

    @property
    def median(self) -> float | None:
        return statistics.median(self.values) if self.values else None

    @property
    def minimum(self) -> float | None:
        return min(self.values) if self.values else None

    @property
    def maximum(self) -> float | None:
        return max(self.values) if self.values else None

    @property
    def spread(self) -> float | None:
        """max - min: the range the five passes cover."""
        return self.maximum - self.minimum if self.values else None


@dataclass(frozen=True)
class Separation:
    faster: str
    slower: str
    median_difference: float | None
    largest_spread: float | None
    ranges_overlap: bool | None
    decided: bool
    p_value: float | None
    verdict: str


EXACT_SPLITS_LIMIT = 200_000
RANDOM_RESAMPLES = 9_999


def permutation_p_value(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Two-sided permutation test of the difference of means: a supporting figure only. Exact (every
    split enumerated) up to 200,000 splits, which covers the protocol's 5 + 5 passes (252 splits); beyond,
    9,999 seeded random splits. The median is the summary shown, but with five passes a difference of medians is too
    coarse a test statistic (most splits tie), so the test uses the mean difference."""
    if len(a) < 2 or len(b) < 2:
        return None
    import math

    import numpy as np
    from scipy import stats

    exact = math.comb(len(a) + len(b), len(a)) <= EXACT_SPLITS_LIMIT

    result = stats.permutation_test(
        (np.asarray(a, dtype=float), np.asarray(b, dtype=float)),
        lambda x, y, axis: np.mean(x, axis=axis) - np.mean(y, axis=axis),
        permutation_type="independent",
        alternative="two-sided",
        n_resamples=np.inf if exact else RANDOM_RESAMPLES,
        vectorized=True,
        rng=np.random.default_rng(0),
        batch=1000,
    )
    return float(result.pvalue)


def separate(name_a: str, a: Sequence[float], name_b: str, b: Sequence[float]) -> Separation:
    """Decided only when the ranges do not overlap and the median difference exceeds the larger spread."""
    da, db = Durations(tuple(a)), Durations(tuple(b))
    if not da.values or not db.values:
        missing = name_a if not da.values else name_b
        return Separation(name_a, name_b, None, None, None, False, None,
                          f"undecided: {missing} has no completed pass")
    faster, slower = (name_a, name_b) if da.median <= db.median else (name_b, name_a)
    fast, slow = (da, db) if faster == name_a else (db, da)
    difference = slow.median - fast.median
    spread = max(da.spread, db.spread)
    overlap = fast.maximum >= slow.minimum
    decided = not overlap and difference > spread
    p_value = permutation_p_value(a, b)
    if decided:
        verdict = (f"{faster} faster than {slower} by {difference:.3f} s (median), beyond the spread "
                   f"{spread:.3f} s with no overlap")
    else:
        why = "the ranges overlap" if overlap else f"the spread {spread:.3f} s is comparable to the difference"
        verdict = f"undecided: {why} (median difference {difference:.3f} s); {UNDECIDED_ADVICE}"
    return Separation(faster, slower, difference, spread, overlap, decided, p_value, verdict)
