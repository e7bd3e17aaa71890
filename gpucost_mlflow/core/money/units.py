"""What the money buys per unit: the planning budget per million planned inputs, the cost per 1,000 validated inputs,
per million output tokens, and the spare capacity of the committed plan (how many more deliverables it holds before
its end, at the slowest pass).

Pure: plain numbers in, Decimal money out (rounded half up to the cent, to two significant digits below 0.10), None with
a reason where a unit does not apply. A unit cost is of the committed total over the planned volume: a forecast, named
so wherever it is shown ("planning budget ... per million planned inputs", one unit on every surface: issue 66), never a
cost per validated result, which stays undefined until deliverables are accepted. It falls as the volume grows inside
the same plan: the spare capacity says how far it could fall.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from gpucost_mlflow.core import approximate
from gpucost_mlflow.core.amounts import CENT
from gpucost_mlflow.core.money.forecast import Forecast
from gpucost_mlflow.core.money.plans import Plan

INPUTS_UNIT = 1000  # a validated result's cost per 1,000 validated inputs
PLANNED_UNIT = 1_000_000  # the planning budget per million planned inputs, whatever its size (issue 66)
TOKENS_UNIT = 1_000_000  # cost per million tokens
NO_TOKENS = "not a generation workload: no output tokens measured"


PLANNING = "Planning budget, a forecast from the planned volume"  # its words, beside NO_RESULT
NO_RESULT = "no cost per result yet: no deliverable accepted"  # the one phrasing, wherever a result cost would stand
TWO_DIGITS = Decimal("0.10")  # below it a unit cost keeps two significant digits: 0.00034 USD, never 0.0003


def per_unit(total: Decimal, units: float, per: int) -> Decimal | None:
    """total / units x per, to the cent (to two significant digits below 0.10); None when there is no unit."""
    if units <= 0:
        return None
    value = total * Decimal(per) / Decimal(repr(units))
    if value >= TWO_DIGITS or value == 0:
        return value.quantize(CENT, rounding=ROUND_HALF_UP)
    return value.quantize(Decimal(1).scaleb(value.adjusted() - 1), rounding=ROUND_HALF_UP)


def money(amount: Decimal, currency: str) -> str:
    """27.50 USD, 0.00034 USD: a unit cost as it was rounded."""
    return f"{amount:,f} {currency}"


def planned_inputs(per_million: Decimal, currency: str) -> str:
    """The planning budget in words, always per million planned inputs: '27,500.00 USD per million planned inputs',
    '0.34 USD per million planned inputs'."""
    return f"{money(per_million, currency)} per million planned inputs"


def per_1000_inputs(total: Decimal, deliverables: int, inputs_per_deliverable: int) -> Decimal | None:
    """The committed total per 1,000 inputs of a volume (110.00 for 4 x 1,000 inputs: 27.50): a validated result's."""
    return per_unit(total, deliverables * inputs_per_deliverable, INPUTS_UNIT)


def per_million_inputs(total: Decimal, deliverables: int, inputs_per_deliverable: int) -> Decimal | None:
    """The committed total per million inputs of the planned volume (0.60 for 4,000 x 500 inputs: 0.30)."""
    return per_unit(total, deliverables * inputs_per_deliverable, PLANNED_UNIT)


def per_million_tokens(total: Decimal, deliverables: int, inputs_per_deliverable: int,
                       tokens_per_input: float | None) -> Decimal | None:
    """The committed total per million tokens of the declared volume, from the measured tokens per input."""
    if tokens_per_input is None:
        return None
    return per_unit(total, deliverables * inputs_per_deliverable * tokens_per_input, TOKENS_UNIT)


@dataclass(frozen=True)
class Spare:
    """How many deliverables the committed plan holds before its end at the slowest pass, beyond the declared ones."""

    capacity: int  # deliverables the plan's paid hours hold, at the slowest-pass forecast
    declared: int

    @property
    def spare(self) -> int:
        return max(0, self.capacity - self.declared)

    def said(self) -> str:
        """'about 260,000 corpora (256,000 more)': a forecast's capacity and what it holds beyond the declared volume,
        each to three significant figures rounded down (both exact where rounding would reach the declared volume)."""
        shown, more = approximate.at_most(self.capacity), approximate.at_most(self.spare)
        if shown <= self.declared:
            shown, more = self.capacity, self.spare
        about = "about " if (shown, more) != (self.capacity, self.spare) else ""
        return f"{about}{shown:,} corpora ({more:,} more)"


def spare(forecast: Forecast, plan: Plan) -> Spare:
    """The deliverables the plan's paid hours hold after the fixed terms (setup, waiting, comparisons, start-up,
    the engine's export), at the slowest pass plus its evaluation and export, its audit and the start-ups its
    children add (core/money/forecast.py), as many side by side as declared."""
    covered, streams = float(plan.covered_hours), forecast.streams
    slowest = forecast.marginal_h(2)
    room = covered - forecast.hours_for(0, 2)
    if slowest <= 0 or room < 0:
        return Spare(0, forecast.deliverables)
    rounds = math.floor(room / slowest + 1e-9)  # whole deliverables only; 1e-9 h absorbs float noise at the edge
    while rounds > 0 and forecast.hours_for(rounds * streams, 2) > covered + 1e-9:  # a child's start-up at a step
        rounds -= 1
    while forecast.hours_for((rounds + 1) * streams, 2) <= covered + 1e-9:
        rounds += 1
    return Spare(max(forecast.deliverables, rounds * streams), forecast.deliverables)
