"""Committed cost against volume: one configuration's committed cost (the cheapest plan covering its slowest-pass
forecast, as the decision commits it) as the expected volume of deliverables grows, as steps, each marked in time
or late against the deadline. The report draws it as its first figure; break-even volumes are where two of these
curves change order (core/money/breakeven.py).

A cost changes only where a window crosses a package length, an hourly increment or a minimum
(`Priced.thresholds`), so evaluating there gives the exact steps; a range with more change points than the budget
is evaluated at that many log-spaced volumes instead (a figure shows no more).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

from gpucost_mlflow.core.money.breakeven import SLOWEST, Priced
from gpucost_mlflow.core.money.decision import Assessment

BUDGET = 400  # volumes priced at most per curve


@dataclass(frozen=True)
class Step:
    """From `volume` deliverables on (up to the next step), the committed cost is `cost`; `in_time`: the
    slowest-pass forecast still meets the deadline there (always True without a deadline)."""

    volume: int
    cost: Decimal
    in_time: bool


def priced(a: Assessment) -> Priced | None:
    """The assessment as break-even and the curve read it (None when it has no forecast or no covering plan)."""
    if a.forecast is None or not a.plans:
        return None
    deadline_h = a.rules.deadline_hours if a.rules else None
    return Priced(a.configuration.name, a.forecast, tuple(p.offer for p in a.plans), a.configuration.gpus, deadline_h,
                  a.work)


def _changes(p: Priced, high: int) -> int:
    """About how many volumes up to `high` a plan of p may change price at (without listing them)."""
    top = p.forecast.hours_for(high, SLOWEST)
    lengths = [o.kind.step_hours(o)[0] for o in p.offers]
    return sum(math.floor(top / length) + 2 for length in lengths)


def _log_spaced(low: int, high: int, count: int) -> set[int]:
    if high <= low:
        return {low}
    ratio = (high / low) ** (1 / max(1, count - 1))
    return {min(high, max(low, round(low * ratio ** i))) for i in range(count)}


def steps(p: Priced, low: int, high: int, budget: int = BUDGET) -> list[Step]:
    """The committed cost from `low` to `high` deliverables as steps (consecutive volumes of equal cost and deadline
    standing merged): exact at every change point, or log-spaced samples when there are more than `budget`."""
    if not 1 <= low <= high:
        raise ValueError(f"volumes must satisfy 1 <= low <= high, got {low}, {high}")
    reach = p.deadline_reach()
    if _changes(p, high) <= budget:
        points = {v for v in p.thresholds(high) if low <= v <= high}
    else:
        points = _log_spaced(low, high, budget)
    points |= {low} | ({reach + 1} if reach is not None and low <= reach + 1 <= high else set())
    result: list[Step] = []
    for volume in sorted(points):
        step = Step(volume, p.cost(volume), reach is None or volume <= reach)
        if not result or (result[-1].cost, result[-1].in_time) != (step.cost, step.in_time):
            result.append(step)
    return result

