"""What the money buys per unit: the committed cost per 1,000 inputs and per million output tokens, and the spare
capacity of the committed plan (how many more deliverables it holds before its end, at the slowest pass).

Pure: plain numbers in, Decimal money out (rounded half up to the cent, to 0.0001 below one unit), None with a reason where a unit does not
apply. A unit cost is of the committed total, so it falls as the volume grows inside the same plan: the spare
capacity says how far it could fall.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from gpucost_mlflow.core.money.costs import CENT
from gpucost_mlflow.core.money.forecast import Forecast
from gpucost_mlflow.core.money.plans import Plan

INPUTS_UNIT = 1000  # cost per 1,000 inputs
TOKENS_UNIT = 1_000_000  # cost per million tokens
NO_TOKENS = "not a generation workload: no output tokens measured"


SUB_CENT = Decimal("0.0001")  # a unit cost below one currency unit keeps four decimals: 0.0005 USD, never 0.00


def per_unit(total: Decimal, units: float, per: int) -> Decimal | None:
    """total / units x per, to the cent (to 0.0001 below 1); None when there is no unit to divide by."""
    if units <= 0:
        return None
    value = total * Decimal(per) / Decimal(repr(units))
    return value.quantize(CENT if value >= 1 else SUB_CENT, rounding=ROUND_HALF_UP)


def money(amount: Decimal, currency: str) -> str:
    """27.50 USD, 0.0005 USD: a unit cost as it was rounded."""
    return f"{amount:,f} {currency}"


def per_1000_inputs(total: Decimal, deliverables: int, inputs_per_deliverable: int) -> Decimal | None:
    """The committed total per 1,000 inputs of the declared volume (110.00 for 4 x 1,000 inputs: 27.50)."""
    return per_unit(total, deliverables * inputs_per_deliverable, INPUTS_UNIT)


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


def spare(forecast: Forecast, plan: Plan) -> Spare:
    """The deliverables the plan's paid hours hold after the fixed terms (setup, waiting, comparisons, start-up,
    the engine's export), at the slowest pass plus its evaluation and export, as many side by side as declared."""
    fixed = forecast.setup_h + forecast.waiting_h + forecast.comparisons_h + forecast.startup_h + forecast.conversion_h
    slowest = forecast.per_deliverable_h[2]
    room = float(plan.covered_hours) - fixed
    if slowest <= 0 or room < 0:
        return Spare(0, forecast.deliverables)
    rounds = math.floor(room / slowest + 1e-9)  # whole deliverables only; 1e-9 h absorbs float noise at the edge
    return Spare(max(forecast.deliverables, rounds * forecast.streams), forecast.deliverables)
