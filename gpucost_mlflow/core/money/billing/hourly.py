"""Billing `hourly`: price_per_lot is one lot for one hour, billed max(min_hours, the window rounded up to
increment_hours)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_HALF_UP, Decimal

from gpucost_mlflow.core.amounts import CENT
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money.billing.base import Billing, Cover, Terms, hours

STEP = ("min_hours", "increment_hours")  # the columns an hourly row's HourlyTerms are read from


@dataclass(frozen=True)
class HourlyTerms(Terms):
    """An hourly row's billing step: at least min_hours, then the window rounded up to increment_hours."""

    min_hours: Decimal
    increment_hours: Decimal


def billed(offer, window: Decimal, lots: int) -> tuple[Decimal, Decimal]:
    """The hours an hourly row bills for the window, and their total for `lots` lots."""
    terms = offer.terms
    steps = (window / terms.increment_hours).to_integral_value(rounding=ROUND_CEILING)
    charged = max(terms.min_hours, steps * terms.increment_hours)
    return charged, (offer.price_per_lot * lots * charged).quantize(CENT, rounding=ROUND_HALF_UP)


SHORT_SPAN_H = Decimal("0.1")  # below six minutes a span reads in seconds (per-second billing: '60 s', '1 s')


def _span(hours: Decimal) -> str:
    """'1 h', '0.5 h', or for a span under six minutes '60 s'."""
    if hours < SHORT_SPAN_H:
        return f"{float(hours * 3600):.4g} s"
    return f"{hours:g} h"


def hours_text(hours: Decimal) -> str:
    """Billed hours as read: exact up to four decimals ('12', '0.5'), else rounded to four (per-second billing gives
    '4.0292'; the exact figure stays in balance.csv). A per-second bill that lands on whole milli-hours keeps no
    trailing zeros of its division: '4.065', never '4.065000000000000000000000000'."""
    shown = hours.quantize(Decimal("0.0001"))
    return f"{shown.normalize():f}" if shown == hours else f"{shown:f}"


class HourlyBilling(Billing):
    name = "hourly"
    by_the_hour = True
    columns = STEP

    def read(self, path, line, values):
        if values["days"]:
            raise GpucostError(f"{path}:{line}: days must be empty on an hourly row (price_per_lot is one lot for one "
                               "hour)")
        step = [hours(path, line, column, values.get(column, "")) for column in STEP]
        return {"days": None, "terms": HourlyTerms(*step)}

    def cover(self, offer, window, lots, deliverable_h, work):
        charged, total = billed(offer, window, lots)
        return Cover(1, charged, charged, total)

    def step_hours(self, offer):
        return float(offer.terms.increment_hours), float(offer.terms.min_hours)

    def billed_as(self, offer):
        return "hourly rate"

    def terms(self, offer) -> str:
        return f"min {_span(offer.terms.min_hours)}, per {_span(offer.terms.increment_hours)}"

    def price(self, offer):
        """'0.8048 USD per lot-hour': an hourly row's price is per lot and per hour, to the catalog's own digits."""
        exact = offer.price_per_lot.as_tuple().exponent < -2
        return f"{offer.price_per_lot:,{'f' if exact else '.2f'}} {offer.currency} per lot-hour"

    def describe(self, offer):
        return f"{offer.gpu} hourly ({self.terms(offer)})"

    def head(self, plan, lots):
        return f"{plan.offer.gpu} hourly, {lots}, {hours_text(plan.hours_billed)} h billed ({self.terms(plan.offer)})"


HOURLY = HourlyBilling()
