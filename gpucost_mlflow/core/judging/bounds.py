"""A share judged against its bar with its confidence interval, as durations are (issue 51): the exact
(Clopper-Pearson) interval of hits out of inputs at the protocol's `confidence` (scipy's `binomtest`). Passed when
the lower bound is at or above the bar, failed when the upper bound is below it, otherwise not shown: the corpus is
too small to tell, and the inputs that would show it at the observed rate are said. 99 of 100 passes a 0.97 point bar,
yet its 95 % lower bound is 94.6 %: not shown."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from gpucost_mlflow.core import approximate
from gpucost_mlflow.core.records import Record

PASSED, FAILED, NOT_SHOWN = "passed", "failed", "not shown"
MOST_INPUTS = 10_000_000  # the search for the inputs that would show a bar stops here


def exact_interval(hits: int, inputs: int, confidence: float) -> tuple[float, float]:
    """The exact two-sided interval of the share hits / inputs at `confidence` (scipy's Clopper-Pearson)."""
    from scipy.stats import binomtest

    found = binomtest(hits, inputs).proportion_ci(confidence_level=confidence, method="exact")
    return float(found.low), float(found.high)


def inputs_needed(share: float, bar: float, confidence: float) -> int | None:
    """The fewest inputs whose exact lower bound at this observed share reaches the bar (the hits rounded down); None
    when the share is not above the bar (no corpus shows it) or it takes more than MOST_INPUTS."""
    if share <= bar:
        return None

    def shows(n: int) -> bool:
        return exact_interval(math.floor(share * n), n, confidence)[0] >= bar

    high = 1
    while not shows(high):
        high *= 2
        if high > MOST_INPUTS:
            return None
    low = high // 2
    while high - low > 1:  # the lower bound grows with the inputs at a fixed share (rounding aside)
        middle = (low + high) // 2
        low, high = (low, middle) if shows(middle) else (middle, high)
    return high


@dataclass(frozen=True)
class ShareBound(Record):
    """Hits out of inputs against a bar: the interval, the outcome and, when not shown, the inputs that would show
    it."""

    hits: int
    inputs: int
    bar: float
    confidence: float
    low: float
    high: float

    DERIVED = ("outcome", "needed")
    RENAMED: ClassVar[dict[str, str]] = {"needed": "inputs_needed"}

    @property
    def share(self) -> float:
        return self.hits / self.inputs if self.inputs else 0.0

    @property
    def outcome(self) -> str:
        if self.low >= self.bar:
            return PASSED
        return FAILED if self.high < self.bar else NOT_SHOWN

    @property
    def needed(self) -> int | None:
        """The inputs that would show the bar at the observed share (None: passed or failed, or none would)."""
        return inputs_needed(self.share, self.bar, self.confidence) if self.outcome == NOT_SHOWN else None

    def words(self) -> str:
        """'98.60 % of 500 (95 % interval 97.14-99.44 %; bar 97.00 %)', and for a bar not shown its inputs needed."""
        said = (f"{100 * self.share:.2f} % of {self.inputs:,} ({100 * self.confidence:g} % interval "
                f"{100 * self.low:.2f}-{100 * self.high:.2f} %; bar {100 * self.bar:.2f} %)")
        if self.outcome != NOT_SHOWN:
            return said
        needed = self.needed
        more = (f"about {approximate.at_least(needed):,} needed at this rate" if needed is not None
                else "no corpus shows it at this rate (it is not above the bar)")
        return f"{said}: quality not shown on {self.inputs:,} inputs: {more}"


def share_bound(hits: int, inputs: int, bar: float, confidence: float) -> ShareBound:
    """The share's exact interval against its bar (no input: an interval of 0-1, never shown)."""
    low, high = exact_interval(hits, inputs, confidence) if inputs else (0.0, 1.0)
    return ShareBound(hits, inputs, bar, confidence, low, high)
