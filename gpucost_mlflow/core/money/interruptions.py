"""The rework an interruptible offer costs: expected, and at the 90th percentile of a Poisson count of interruptions.

Interruptions arrive at the row's declared rate (per day of the window, which the rework itself lengthens). Each
one loses the work since the last finished deliverable (half a deliverable on average: a deliverable is what is
kept) and pays a restart. The expected window solves h = W + (rate x h / 24) x loss; the pessimistic one takes the
smallest count k whose Poisson probability over the window W + k x loss reaches 0.9. Pure arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

P90 = 0.9


@dataclass(frozen=True)
class Rework:
    """The window an interruptible offer needs: expected and at the 90th percentile, with the assumption said."""

    window_h: float  # without interruptions
    expected_h: float
    p90_h: float
    expected_count: float
    p90_count: int
    assumption: str


def poisson_cdf(k: int, mean: float) -> float:
    """P(N <= k) for N ~ Poisson(mean)."""
    term = total = math.exp(-mean)
    for i in range(1, k + 1):
        term *= mean / i
        total += term
    return total


def rework(window_h: float, deliverable_h: float, per_day: float, restart_h: float, source: str) -> Rework:
    """The expected and P90 windows of an interruptible offer for a window of window_h hours whose deliverables
    take deliverable_h hours each."""
    loss = deliverable_h / 2 + restart_h
    rate = per_day / 24
    if rate * loss >= 1:  # every hour of work brings an hour of rework or more: the work never ends
        expected = math.inf
    else:
        expected = window_h / (1 - rate * loss)
    count = 0
    while poisson_cdf(count, rate * (window_h + count * loss)) < P90 and count < 10_000:
        count += 1
    assumption = (f"{per_day:g} interruptions a day expected ({source}); each loses the work since the last "
                  f"finished deliverable ({deliverable_h / 2:.3g} h on average) and a {restart_h:g} h restart; "
                  f"P90: {count} interruption{'s' if count != 1 else ''} (Poisson)")
    return Rework(window_h, expected, window_h + count * loss, rate * expected if math.isfinite(expected) else math.inf,
                  count, assumption)
