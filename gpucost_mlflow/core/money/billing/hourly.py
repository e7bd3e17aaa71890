"""Billing `hourly`: price_per_lot is one lot for one hour, billed max(min_hours, the window rounded up to
increment_hours)."""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_HALF_UP, Decimal

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money.billing.base import CENT, Billing, Cover, hours


def billed(offer, window: Decimal, lots: int) -> tuple[Decimal, Decimal]:
    """The hours an hourly row bills for the window, and their total for `lots` lots."""
    steps = (window / offer.increment_hours).to_integral_value(rounding=ROUND_CEILING)
    charged = max(offer.min_hours, steps * offer.increment_hours)
    return charged, (offer.price_per_lot * lots * charged).quantize(CENT, rounding=ROUND_HALF_UP)


class HourlyBilling(Billing):
    name = "hourly"
    by_the_hour = True
    columns = ("min_hours", "increment_hours")

    def read(self, path, line, values):
        if values["days"]:
            raise GpucostError(f"{path}:{line}: days must be empty on an hourly row (price_per_lot is one lot for one "
                               "hour)")
        return {"days": None, "min_hours": hours(path, line, "min_hours", values.get("min_hours", "")),
                "increment_hours": hours(path, line, "increment_hours", values.get("increment_hours", ""))}

    def cover(self, offer, window, lots, deliverable_h):
        charged, total = billed(offer, window, lots)
        return Cover(1, charged, charged, total)

    def step_hours(self, offer):
        return float(offer.increment_hours), float(offer.min_hours)

    def terms(self, offer) -> str:
        return f"min {offer.min_hours:g} h, per {offer.increment_hours:g} h"

    def describe(self, offer):
        return f"{offer.gpu} hourly ({self.terms(offer)})"

    def head(self, plan, lots):
        return f"{plan.offer.gpu} hourly, {lots}, {plan.hours_billed:g} h billed ({self.terms(plan.offer)})"


HOURLY = HourlyBilling()
