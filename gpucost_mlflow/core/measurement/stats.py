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


def under_sampled(count: int, required: int | None) -> str:
    """'under-sampled (k of N)' when fewer passes count than the protocol requires, else ''."""
    return f"under-sampled ({count} of {required})" if required and count < required else ""


def separate(name_a: str, a: Sequence[float], name_b: str, b: Sequence[float], required: int | None = None) -> Separation:
    """Decided only when both have the required passes, the ranges do not overlap and the median difference
    exceeds the larger spread: one pass never beats five (PROTOCOL.md §5)."""
    da, db = Durations(tuple(a)), Durations(tuple(b))
    if not da.values or not db.values:
        missing = name_a if not da.values else name_b
        return Separation(name_a, name_b, None, None, None, False, None,
                          f"undecided: {missing} has no completed pass")
    short = [f"{name} is {under_sampled(len(d.values), required)}" for name, d in ((name_a, da), (name_b, db))
             if under_sampled(len(d.values), required)]
    faster, slower = (name_a, name_b) if da.median <= db.median else (name_b, name_a)
    fast, slow = (da, db) if faster == name_a else (db, da)
    difference = slow.median - fast.median
    spread = max(da.spread, db.spread)
    overlap = fast.maximum >= slow.minimum
    decided = not overlap and difference > spread and not short
    p_value = permutation_p_value(a, b)
    if short:
        verdict = (f"undecided: {' and '.join(short)} (median difference {difference:.3f} s); run the missing passes "
                   "under the same protocol")
    elif decided:
        verdict = (f"{faster} faster than {slower} by {difference:.3f} s (median), beyond the spread "
                   f"{spread:.3f} s with no overlap")
    else:
        why = "the ranges overlap" if overlap else f"the spread {spread:.3f} s is comparable to the difference"
        verdict = f"undecided: {why} (median difference {difference:.3f} s); {UNDECIDED_ADVICE}"
    return Separation(faster, slower, difference, spread, overlap, decided, p_value, verdict)


@dataclass(frozen=True)
class Stability:
    """Whether one configuration's own durations agree: max/min at most the protocol's `max_spread_ratio`."""

    ratio: float | None  # max / min of the durations (None: fewer than two)
    limit: float
    outliers: tuple[int, ...]  # positions of the passes outside [median / limit, median x limit], else the extremes

    @property
    def stable(self) -> bool:
        return self.ratio is None or self.ratio <= self.limit


def stability(values: Sequence[float], limit: float) -> Stability:
    """Max/min of the durations against the limit, and which passes make it unstable (PROTOCOL.md §6)."""
    if len(values) < 2 or min(values) <= 0:
        return Stability(None, limit, ())
    ratio = max(values) / min(values)
    if ratio <= limit:
        return Stability(ratio, limit, ())
    middle = statistics.median(values)
    far = tuple(i for i, v in enumerate(values) if v > middle * limit or v < middle / limit)
    extremes = (values.index(min(values)), values.index(max(values)))
    return Stability(ratio, limit, far or extremes)


POWER_Z = 2.8  # 1.96 (two-sided 5 %) + 0.84 (80 % power): the usual normal-approximation sample size


def repetitions_needed(a: Sequence[float], b: Sequence[float]) -> int | None:
    """Passes per configuration at which the observed median difference would stand out of the observed noise
    (normal approximation, an estimate to plan more passes, not a guarantee); None when no difference was seen."""
    if len(a) < 2 or len(b) < 2:
        return None
    difference = abs(statistics.median(a) - statistics.median(b))
    noise = max(statistics.stdev(a), statistics.stdev(b))
    if difference <= 0:
        return None
    import math

    return max(len(a), len(b), math.ceil(2 * (POWER_Z * noise / difference) ** 2))


SHORTEST_RELIABLE_S = 1.0  # a measured part under a second times clock noise and boost behaviour more than the work


def too_short(pass_s: float | None, floor: float = SHORTEST_RELIABLE_S) -> str:
    """'too short to time reliably (0.420 s < 1 s)' for a measured part under the floor; '' otherwise."""
    if pass_s is None or pass_s >= floor:
        return ""
    return f"too short to time reliably ({pass_s:.3f} s < {floor:g} s)"
