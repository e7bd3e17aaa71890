"""Reading five durations: raw values, median, min, max, counts; separability of two variants.

No p95 and no bare mean from five passes. Two configurations separate when the Hodges-Lehmann confidence interval of
the shift between their durations (the median of every pairwise difference, its interval from the exact Mann-Whitney
distribution) excludes zero, at the protocol's confidence: a spread comparable to the difference of medians leaves
zero inside it, and unlike a rule on min-max ranges (which only widen with more passes) more passes can narrow it,
so the passes it would take are estimated for the same test (Noether's sample size for the Mann-Whitney test).
"""

from __future__ import annotations

import functools
import math
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
    p_value: float | None  # the permutation p-value, where the table that shows it filled it in (report/tables.py)
    verdict: str
    interval: tuple[float, float] | None = None  # the Hodges-Lehmann interval of slower minus faster, in seconds
    confidence: float = 0.0  # the level this look's interval is read at
    looks: int = 1  # the looks at the data the protocol's confidence is shared over (a pre-registered second stage: 2)

    @property
    def level(self) -> str:
        """'95 %', or '97.5 % (95 % over two looks)' when the protocol's confidence is shared over looks."""
        return level_words(self.confidence, self.looks)


DEFAULT_CONFIDENCE = 0.95  # a protocol without `confidence` decides at 95 %
EXACT_U_LIMIT = 900  # n x m up to which the Mann-Whitney null distribution is counted exactly (30 + 30 passes)
LOOKS = {1: "one look", 2: "two looks"}  # a look at the data in words


def per_look(confidence: float, looks: int) -> float:
    """The level each of `looks` looks at the data is read at so that together they keep the declared error rate
    (Bonferroni: 1 - confidence spent in equal parts, alpha / looks each)."""
    return 1 - (1 - confidence) / looks


def over_looks(confidence: float, looks: int = 1) -> str:
    """' (95 % over two looks)' after a look's level when the declared confidence is shared over looks, else ''."""
    if looks <= 1:
        return ""
    declared = round(100 * (1 - (1 - confidence) * looks), 6)
    return f" ({declared:g} % over {LOOKS.get(looks, f'{looks} looks')})"


def level_words(confidence: float, looks: int = 1) -> str:
    """A look's level in words: '95 %', or '97.5 % (95 % over two looks)' when it is one of several looks."""
    return f"{100 * confidence:g} %{over_looks(confidence, looks)}"


def _u_counts(n: int, m: int) -> list[int]:
    """How many of the C(n + m, n) orderings give each Mann-Whitney U, 0 to n x m (no ties)."""
    # counts[j][u]: orderings of i items of the first sample and j of the second giving U = u; built row by row.
    previous = [[1] for _ in range(m + 1)]  # i = 0: U = 0 whatever j
    for i in range(1, n + 1):
        current = [[1]]  # j = 0: U = 0
        for j in range(1, m + 1):
            size = i * j + 1
            row = [0] * size
            for u, count in enumerate(previous[j]):  # the largest item is from the first sample: j pairs above it
                row[u + j] += count
            for u, count in enumerate(current[j - 1]):  # it is from the second: no pair added
                row[u] += count
            current.append(row)
        previous = current
    return previous[m]


@functools.lru_cache(maxsize=256)  # the same few sample sizes are asked again and again
def critical_u(n: int, m: int, confidence: float) -> int:
    """The largest c with P(U <= c) <= (1 - confidence) / 2 under no difference (-1: no c, the interval is every
    difference); exact up to EXACT_U_LIMIT, the normal approximation beyond."""
    alpha = (1 - confidence) / 2
    if n * m <= EXACT_U_LIMIT:
        counts = _u_counts(n, m)
        total, running, c = sum(counts), 0, -1
        for u, count in enumerate(counts):
            running += count
            if running / total > alpha:
                break
            c = u
        return c
    from statistics import NormalDist

    z = NormalDist().inv_cdf(1 - alpha)
    return max(-1, math.floor(n * m / 2 - z * math.sqrt(n * m * (n + m + 1) / 12) - 0.5))


def shift_interval(fast: Sequence[float], slow: Sequence[float], confidence: float) -> tuple[float, float] | None:
    """The Hodges-Lehmann interval of slow minus fast at this confidence; None when the samples are too small for any
    interval to exclude a shift (two passes against two, say). Its ends are the c-th smallest and largest of every
    difference, picked without sorting them all (numpy's partition: the same values, at thousands of passes a side)."""
    c = critical_u(len(fast), len(slow), confidence)
    if c < 0:
        return None
    import numpy as np

    differences = np.subtract.outer(np.asarray(slow, dtype=float), np.asarray(fast, dtype=float)).ravel()
    low, high = c, differences.size - 1 - c
    ends = np.partition(differences, (low, high))
    return float(ends[low]), float(ends[high])


def under_sampled(count: int, required: int | None) -> str:
    """'under-sampled (k of N)' when fewer passes count than the protocol requires, else ''."""
    return f"under-sampled ({count} of {required})" if required and count < required else ""


def separate(name_a: str, a: Sequence[float], name_b: str, b: Sequence[float], required: int | None = None,
             confidence: float = DEFAULT_CONFIDENCE, too_short_to_time: tuple[str, str] = ("", ""), looks: int = 1
             ) -> Separation:
    """Decided only when both have the required passes (one pass never beats five, PROTOCOL.md §5), neither side's
    durations were measured under the floor (`too_short_to_time`: each side's `too_short` reason, '' when it was
    not) and the Hodges-Lehmann interval of the shift at `confidence` excludes zero (a spread comparable to the
    difference does not decide, §6). `confidence` is this look's level; `looks` (2 under a pre-registered second
    stage: `per_look`) only says so in the verdict. Its permutation p-value (a supporting figure, never the
    decision) is left to the caller that shows it: `PValues` computes a table's beside the rest of the report."""
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
    interval = shift_interval(fast.values, slow.values, confidence)
    untimed = [f"{name} {reason}" for name, reason in zip((name_a, name_b), too_short_to_time) if reason]
    decided = interval is not None and interval[0] > 0 and not short and not untimed
    said = f"{100 * confidence:g} % interval{over_looks(confidence, looks)}"
    shown = f"{interval[0]:.3f} to {interval[1]:.3f} s" if interval else "not computable from so few passes"
    if short:
        verdict = (f"undecided: {' and '.join(short)} (median difference {difference:.3f} s); run the missing passes "
                   "under the same protocol")
    elif untimed:
        verdict = (f"undecided: {TOO_SHORT_TO_TIME} ({', '.join(untimed)}); the median difference {difference:.3f} s "
                   "is not read on durations the clock cannot time")
    elif decided:
        verdict = (f"{faster} faster than {slower} by {difference:.3f} s (median); the {said} of the "
                   f"difference, {shown}, excludes zero")
    else:
        verdict = (f"undecided: the {said} of the difference, {shown}, includes zero (median difference "
                   f"{difference:.3f} s, largest spread {spread:.3f} s); {UNDECIDED_ADVICE}")
    return Separation(faster, slower, difference, spread, overlap, decided, None, verdict, interval, confidence,
                      looks)


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


POWER = 0.8  # the usual planning power


def repetitions_needed(a: Sequence[float], b: Sequence[float], confidence: float = DEFAULT_CONFIDENCE) -> int | None:
    """Passes per configuration at which the separation test above would find the observed difference (Noether's
    sample size for the Mann-Whitney test at this confidence and 80 % power, from the observed share of pairs in
    which the slower median's passes are slower): an estimate to plan more passes, not a guarantee; None when no
    difference was seen."""
    if len(a) < 2 or len(b) < 2:
        return None
    fast, slow = (a, b) if statistics.median(a) <= statistics.median(b) else (b, a)
    pairs = [(y > x) + 0.5 * (y == x) for x in fast for y in slow]
    share = sum(pairs) / len(pairs)
    if share <= 0.5:
        return None
    from statistics import NormalDist

    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2) + NormalDist().inv_cdf(POWER)
    return max(len(a), len(b), math.ceil(z ** 2 / (6 * (share - 0.5) ** 2)))


SHORTEST_RELIABLE_S = 1.0  # a measured part under a second times clock noise and boost behaviour more than the work
TOO_SHORT_TO_TIME = "too short to time: set min_measured_s"  # why durations under it separate nothing
NOT_BY_PASSES = ("more passes of durations the clock cannot time do not settle it: a protocol with min_measured_s "
                 "(the corpus repeated inside the clock), in a new experiment, would")


def too_short(pass_s: float | None, floor: float = SHORTEST_RELIABLE_S) -> str:
    """'too short to time reliably (0.420 s < 1 s)' for a measured part under the floor; '' otherwise."""
    if pass_s is None or pass_s >= floor:
        return ""
    return f"too short to time reliably ({pass_s:.3f} s < {floor:g} s)"
