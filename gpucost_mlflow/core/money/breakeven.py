"""Break-even volume: how many deliverables it takes for two configurations' committed costs to change order.

Both costs come from the same forecast (core/money/forecast.py) at its slowest pass, priced by the cheapest
covering plan (core/money/plans.py), as the decision commits them. A cost is a step function of the volume: it
changes only where a window crosses a package length, an hourly increment or a minimum, so the order is
checked at exactly those volumes, and only at volumes where both still meet the deadline. A per-token plan's cost
grows with every deliverable instead: it is read hour by hour of the window (its `step_hours`), so a flip against it
is found to within an hour's deliverables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

from gpucost_mlflow.core.money.catalog import Package
from gpucost_mlflow.core.money.forecast import Forecast
from gpucost_mlflow.core.money.plans import NO_WORK, Work, covering_plans, to_hours

MAX_VOLUME = 1_000_000
MAX_POINTS = 20_000  # volumes evaluated at most (each one prices both configurations)


SLOWEST = 2  # the forecast's slowest pass: what a plan is committed to cover


@dataclass(frozen=True)
class Priced:
    """One configuration as break-even needs it: its forecast, the catalog rows of its device, its GPUs, the
    hours from the planned start to the deadline (None: no deadline to meet), and the work a per-token row prices."""

    name: str
    forecast: Forecast
    offers: tuple[Package, ...]
    gpus: int = 1
    deadline_h: float | None = None
    work: Work = NO_WORK

    def cost(self, volume: int) -> Decimal:
        """The cheapest covering plan's total for this volume of deliverables (slowest-pass forecast)."""
        return covering_plans(list(self.offers), to_hours(self.forecast.hours_for(volume, SLOWEST)), self.gpus,
                              self.forecast.per_deliverable_h[SLOWEST], self.work.at(volume))[0].total

    @property
    def _per(self) -> float:
        """The hours one more round of deliverables adds at the slowest pass (its audit and start-up share in)."""
        return self.forecast.marginal_h(SLOWEST)

    def deadline_reach(self) -> int | None:
        """The largest volume whose slowest-pass forecast still meets the deadline (0: none; None: no deadline)."""
        if self.deadline_h is None:
            return None
        rounds = math.floor((self.deadline_h - self.forecast.hours_for(0, SLOWEST)) / self._per + 1e-9)
        return max(0, rounds) * self.forecast.streams

    def _steps(self) -> list[tuple[float, float]]:
        """(step, minimum) hours of each catalog row: a package length, or an hourly increment above its minimum."""
        return [o.kind.step_hours(o) for o in self.offers]

    def reach(self, budget: int) -> int:
        """The largest volume up to which each of its rows changes price at most `budget` times."""
        return max(1, min(math.floor(budget * step / self._per) for step, _ in self._steps()) * self.forecast.streams)

    def thresholds(self, limit: int) -> set[int]:
        """Volumes (up to limit) at which one of its plans may bill one more period, increment or lot-hour."""
        fixed = self.forecast.hours_for(0, SLOWEST)
        streams = self.forecast.streams
        top = self.forecast.hours_for(limit, SLOWEST)
        points: set[int] = set()
        for step, minimum in self._steps():
            first = max(1, math.floor(max(fixed, minimum) / step) - 1)
            for k in range(first, math.floor(top / step) + 2):
                volume = math.floor((k * step - fixed) / self._per) * streams + 1
                if 1 <= volume <= limit:
                    points.update((volume, min(limit, volume + 1)))
        return points


@dataclass(frozen=True)
class BreakEven:
    first: str
    second: str
    volume: int
    cheaper_at_volume: str  # a name, or "" on a tie
    costs: tuple[Decimal, Decimal]
    currency: str
    flip_above: tuple[int, str] | None  # (volume, name cheaper from there)
    flip_below: tuple[int, str] | None  # (volume up to which the other order held, name cheaper up to there)
    searched_to: int
    deadline_reach: tuple[int | None, int | None] = (None, None)  # per configuration: largest volume in time

    def _deadline_words(self) -> tuple[list[str], list[str]]:
        """Who misses the deadline at the expected volume, and where each other one stops meeting it."""
        missing, stops = [], []
        for name, reach in zip((self.first, self.second), self.deadline_reach):
            if reach is None:
                continue
            if reach < self.volume:
                missing.append(f"{name} misses the deadline at every volume" if reach == 0 else
                               f"{name} misses the deadline there (it meets it up to {reach:,} deliverables)")
            else:
                stops.append(f"{name} stops meeting the deadline above {reach:,} deliverables")
        return missing, stops

    def describe(self) -> str:
        """One sentence, labelled a forecast."""
        c = self.currency
        missing, stops = self._deadline_words()
        if missing:
            return (f"{self.first} vs {self.second}: not compared at {self.volume:,} expected deliverable(s): "
                    + "; ".join(missing + stops) + " (slowest-pass forecast).")
        now = (f"{self.cheaper_at_volume} is cheaper" if self.cheaper_at_volume else "they cost the same")
        head = (f"{self.first} vs {self.second}: at {self.volume:,} expected deliverable(s) {now} "
                f"({self.costs[0]:,.2f} vs {self.costs[1]:,.2f} {c}, forecast)")
        parts = []
        if self.flip_above:
            parts.append(f"from {self.flip_above[0]:,} deliverables {self.flip_above[1]} is cheaper")
        if self.flip_below:
            parts.append(f"up to {self.flip_below[0]:,} deliverables {self.flip_below[1]} was cheaper")
        if not parts and self.searched_to <= self.volume:
            parts.append("the order was not searched beyond the expected deliverables")
        elif not parts:
            parts.append(f"the order does not flip between 1 and {self.searched_to:,} deliverables"
                         + (" (where both meet the deadline)" if stops else ""))
        return head + "; " + "; ".join(parts + stops) + "."


def _cheaper(a: Priced, b: Priced, volume: int) -> str:
    first, second = a.cost(volume), b.cost(volume)
    return a.name if first < second else b.name if second < first else ""


def break_even(a: Priced, b: Priced, volume: int, limit: int = MAX_VOLUME) -> BreakEven:
    """Where the order of a and b at `volume` deliverables flips, nearest above and nearest below, searched only
    over volumes where both still meet the deadline; not compared where one of them misses it."""
    reaches = (a.deadline_reach(), b.deadline_reach())
    if any(reach is not None and reach < volume for reach in reaches):
        return BreakEven(a.name, b.name, volume, "", (a.cost(volume), b.cost(volume)), a.offers[0].currency,
                         None, None, volume, reaches)
    budget = MAX_POINTS // (2 * (len(a.offers) + len(b.offers)))
    limit = max(volume, min(limit, a.reach(budget), b.reach(budget), *(r for r in reaches if r is not None)))
    points = sorted(a.thresholds(limit) | b.thresholds(limit) | {1, volume})
    now = _cheaper(a, b, volume)
    above = next(((v, w) for v in points if v > volume for w in [_cheaper(a, b, v)] if w != now and w), None)
    below = None
    previous = volume
    for v in reversed([p for p in points if p < volume]):
        winner = _cheaper(a, b, v)
        if winner != now and winner:
            below = (previous - 1, winner)
            break
        previous = v
    return BreakEven(a.name, b.name, volume, now, (a.cost(volume), b.cost(volume)), a.offers[0].currency,
                     above, below, limit, reaches)
