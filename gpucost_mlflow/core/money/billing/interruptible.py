"""Billing `interruptible`: an hourly rate (spot, preemptible) billed for the window its interruptions lengthen,
committed at the 90th percentile of their count with the expected total beside it (core/money/interruptions.py).
A row carries the user's expectation: interruptions_per_day, restart_hours and where the expectation comes from."""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money.billing.base import Cover, number, to_hours
from gpucost_mlflow.core.money.billing.hourly import HourlyBilling, HourlyTerms, billed, hours_text
from gpucost_mlflow.core.money.interruptions import rework

ASSUMPTION = ("interruptions_per_day", "restart_hours", "interruptions_source")


@dataclass(frozen=True)
class InterruptibleTerms(HourlyTerms):
    """An interruptible row's hourly step and the user's expectation: interruptions a day, what a restart costs in
    hours, and where the expectation comes from."""

    interruptions_per_day: Decimal
    restart_hours: Decimal
    interruptions_source: str


class InterruptibleBilling(HourlyBilling):
    name = "interruptible"
    columns = HourlyBilling.columns + ASSUMPTION

    def read(self, path, line, values):
        hourly = super().read(path, line, values)
        rate = values.get("interruptions_per_day", "")
        if not rate or not values.get("restart_hours") or not values.get("interruptions_source"):
            raise GpucostError(f"{path}:{line}: an interruptible row needs interruptions_per_day (your expectation), "
                               "restart_hours and interruptions_source (where the expectation comes from)")
        per_day = number(path, line, "interruptions_per_day", rate)
        if per_day < 0:
            raise GpucostError(f"{path}:{line}: interruptions_per_day '{rate}' is negative")
        restart = number(path, line, "restart_hours", values["restart_hours"])
        if restart < 0:
            raise GpucostError(f"{path}:{line}: restart_hours '{values['restart_hours']}' is negative")
        step = hourly["terms"]
        return {**hourly, "terms": InterruptibleTerms(step.min_hours, step.increment_hours, per_day, restart,
                                                      values["interruptions_source"])}

    def cover(self, offer, window, lots, deliverable_h, work):
        terms = offer.terms
        found = rework(float(window), deliverable_h, float(terms.interruptions_per_day), float(terms.restart_hours),
                       terms.interruptions_source)
        if not math.isfinite(found.expected_h):
            return None  # its interruptions would outrun the work
        charged, total = billed(offer, to_hours(found.p90_h), lots)
        expected_charged, expected = billed(offer, to_hours(found.expected_h), lots)
        return Cover(1, charged, charged, total, expected, expected_charged, found)

    def describe(self, offer):
        return f"{offer.gpu} interruptible hourly ({self.terms(offer)})"

    def head(self, plan, lots):
        return (f"{plan.offer.gpu} interruptible hourly, {lots}, {hours_text(plan.hours_billed)} h billed at P90 "
                f"(expected {hours_text(plan.expected_billed)} h: {plan.expected_total:,.2f} {plan.currency}; "
                f"{plan.rework.assumption})")


INTERRUPTIBLE = InterruptibleBilling()
