"""A count that comes from a forecast or an estimate (a plan's capacity, the inputs that would show a bar), said to
three significant figures: "about 260,000 corpora", never "260,620", which claims a precision no forecast has.
Rounded towards the safe side: a capacity down (the plan holds at least that), a need up (no fewer would do).
Exact counts (the declared volume, a corpus's inputs) are never passed through here."""

from __future__ import annotations

import math

DIGITS = 3  # significant figures of an approximate count


def _step(count: int, digits: int) -> int:
    """The place of the last significant figure kept: 1 for counts of `digits` figures or fewer."""
    return 10 ** max(0, len(str(abs(count))) - digits)


def at_most(count: int, digits: int = DIGITS) -> int:
    """The count rounded down to `digits` significant figures: 260,620 -> 260,000; 2,258 -> 2,250; 328 -> 328."""
    step = _step(count, digits)
    return count // step * step


def at_least(count: int, digits: int = DIGITS) -> int:
    """The count rounded up to `digits` significant figures: 160,497 -> 161,000; 1,225 -> 1,230; 999 -> 999."""
    step = _step(count, digits)
    return math.ceil(count / step) * step
