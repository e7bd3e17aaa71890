"""Billing `package`: a lot for a fixed number of days, bought whole, period after period (never an automatic
extension); a short run never turns it into an hourly bill."""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_HALF_UP, Decimal

from gpucost_mlflow.core.amounts import CENT
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money.billing.base import Billing, Cover, whole


class PackageBilling(Billing):
    name = "package"

    def read(self, path, line, values):
        if not values["days"]:
            raise GpucostError(f"{path}:{line}: empty days")
        return {"days": whole(path, line, "days", values["days"]), "terms": None}

    def cover(self, offer, hours, lots, deliverable_h, work):
        period = Decimal(offer.days * 24)
        periods = int((hours / period).to_integral_value(rounding=ROUND_CEILING))
        total = (offer.price_per_lot * lots * periods).quantize(CENT, rounding=ROUND_HALF_UP)
        return Cover(periods, None, period * periods, total)

    def step_hours(self, offer):
        return offer.days * 24.0, 0.0

    def billed_as(self, offer):
        return f"{offer.days} days"

    def describe(self, offer):
        return f"{offer.gpu} {offer.days}-day package"

    def head(self, plan, lots):
        return f"{plan.periods} x {plan.offer.days}-day {plan.offer.gpu} package, {lots}"


PACKAGE = PackageBilling()
