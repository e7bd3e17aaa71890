"""Covering plans: every way a catalog covers a window (length x consecutive periods x lots), cheapest first.

A fixed package is bought whole, period after period (never an automatic extension); an hourly rate
bills max(min_hours, the window rounded up to increment_hours). An interruptible rate is billed the same way for
the window its interruptions lengthen: committed at the 90th percentile of their count, the expected total beside
it (core/money/interruptions.py). Lots = ceil(GPUs used / GPUs per lot); a lot's unused GPUs are said, never
counted as extra throughput.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_HALF_UP, Decimal, InvalidOperation

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money.catalog import Package
from gpucost_mlflow.core.money.costs import CENT
from gpucost_mlflow.core.money.interruptions import Rework, rework

HOUR_QUANTUM = Decimal("0.000001")  # 3.6 ms: float noise below it never bills another increment


def to_hours(value: float | Decimal) -> Decimal:
    """A window length as an exact Decimal of hours (floats rounded to the micro-hour)."""
    if isinstance(value, Decimal):
        return value
    return Decimal(repr(float(value))).quantize(HOUR_QUANTUM, rounding=ROUND_HALF_UP)


def parse_positive(text: str, name: str, what: str = "a number") -> Decimal:
    """A finite decimal > 0 typed by a user, refused in one line otherwise."""
    try:
        value = Decimal(str(text).strip())
    except InvalidOperation:
        raise GpucostError(f"{name} must be {what} > 0, got '{text}'") from None
    if not value.is_finite() or value <= 0:
        raise GpucostError(f"{name} must be {what} > 0, got '{text}'")
    return value


def parse_hours(text: str, name: str = "--hours") -> Decimal:
    """A user's window length: a decimal number of hours > 0."""
    return parse_positive(text, name, "a number of hours")


def lots_for(gpus: int, gpus_per_lot: int) -> int:
    """Lots needed to hold this many GPUs (a B200 lot already holds two)."""
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
        raise GpucostError(f"GPUs used must be a whole number >= 1, got {gpus!r}")
    return math.ceil(gpus / gpus_per_lot)


@dataclass(frozen=True)
class Plan:
    """One way to cover the window with one catalog row; `total` is what is committed, used or not."""

    offer: Package
    window_hours: Decimal
    gpus: int
    lots: int
    periods: int
    hours_billed: Decimal | None
    total: Decimal
    expected_total: Decimal | None = None  # an interruptible row: the total at the expected count of interruptions
    expected_billed: Decimal | None = None
    rework: Rework | None = None

    @property
    def currency(self) -> str:
        return self.offer.currency

    @property
    def covered_hours(self) -> Decimal:
        """Hours the plan pays for: whole packages, or the hours billed."""
        if self.hours_billed is not None:
            return self.hours_billed
        return Decimal(self.offer.days * 24 * self.periods)

    @property
    def unused_gpus(self) -> int:
        return self.lots * self.offer.gpus_per_lot - self.gpus

    @property
    def note(self) -> str:
        """'uses 1 of the lot's 2 GPUs': the idle GPUs are paid for and add no throughput."""
        if not self.unused_gpus:
            return ""
        held = self.lots * self.offer.gpus_per_lot
        whose = "the lot's" if self.lots == 1 else f"the {self.lots} lots'"
        return f"uses {self.gpus} of {whose} {held} GPUs (no throughput assumed for the others)"

    def describe(self) -> str:
        """'2 x 7-day rtx-4090 package, 2 lots: 440.00 USD' or 'cpu hourly, 1 lot, 5 h billed ...: 0.50 USD'."""
        lots = f"{self.lots} lot{'s' if self.lots > 1 else ''}"
        if self.rework is not None:
            o = self.offer
            head = (f"{o.gpu} interruptible hourly, {lots}, {self.hours_billed:g} h billed at P90 (expected "
                    f"{self.expected_billed:g} h: {self.expected_total:,.2f} {self.currency}; {self.rework.assumption})")
        elif self.hours_billed is not None:
            o = self.offer
            head = f"{o.gpu} hourly, {lots}, {self.hours_billed:g} h billed (min {o.min_hours:g} h, per {o.increment_hours:g} h)"
        else:
            head = f"{self.periods} x {self.offer.days}-day {self.offer.gpu} package, {lots}"
        note = f"; {self.note}" if self.note else ""
        return f"{head}: {self.total:,.2f} {self.currency}{note}"

    def as_dict(self) -> dict:
        """The plan as JSON-ready values (money and hours as decimal strings)."""
        return {
            "gpu": self.offer.gpu,
            "provider": self.offer.provider,
            "catalog_version": self.offer.catalog_version,
            "billing": self.offer.billing,
            "package_days": self.offer.days if not self.offer.hourly else None,
            "periods": self.periods,
            "lots": self.lots,
            "gpus_per_lot": self.offer.gpus_per_lot,
            "gpus_used": self.gpus,
            "unused_gpus": self.unused_gpus,
            "window_hours": str(self.window_hours),
            "hours_billed": str(self.hours_billed) if self.hours_billed is not None else None,
            "covered_hours": str(self.covered_hours),
            "price_per_lot": str(self.offer.price_per_lot),
            "total": str(self.total),
            "expected_total": str(self.expected_total if self.expected_total is not None else self.total),
            "p90_total": str(self.total),
            "interruption_assumption": self.rework.assumption if self.rework else "",
            "currency": self.currency,
            "example_price": self.offer.example,
            "note": self.note,
        }


def _billed(offer: Package, hours: Decimal, lots: int) -> tuple[Decimal, Decimal]:
    """An hourly row's billed hours for the window and their total."""
    steps = (hours / offer.increment_hours).to_integral_value(rounding=ROUND_CEILING)
    billed = max(offer.min_hours, steps * offer.increment_hours)
    return billed, (offer.price_per_lot * lots * billed).quantize(CENT, rounding=ROUND_HALF_UP)


def plan_for(offer: Package, hours: Decimal, gpus: int, deliverable_h: float = 0.0) -> Plan | None:
    """The one plan this catalog row gives for the window: the fewest consecutive periods, or the billed hours; an
    interruptible row billed at its P90 window (deliverable_h: what an interruption loses at most), None when its
    interruptions would outrun the work."""
    if hours <= 0:
        raise GpucostError(f"a window must last more than 0 hours, got {hours}")
    lots = lots_for(gpus, offer.gpus_per_lot)
    if offer.interruptible:
        found = rework(float(hours), deliverable_h, float(offer.interruptions_per_day), float(offer.restart_hours),
                       offer.interruptions_source)
        if not math.isfinite(found.expected_h):
            return None
        billed, total = _billed(offer, to_hours(found.p90_h), lots)
        expected_billed, expected = _billed(offer, to_hours(found.expected_h), lots)
        return Plan(offer, hours, gpus, lots, 1, billed, total, expected, expected_billed, found)
    if offer.hourly:
        billed, total = _billed(offer, hours, lots)
        return Plan(offer, hours, gpus, lots, 1, billed, total)
    periods = int((hours / (offer.days * 24)).to_integral_value(rounding=ROUND_CEILING))
    total = offer.price_per_lot * lots * periods
    return Plan(offer, hours, gpus, lots, periods, None, total.quantize(CENT, rounding=ROUND_HALF_UP))


def covering_plans(offers: list[Package], hours: Decimal, gpus: int = 1, deliverable_h: float = 0.0) -> list[Plan]:
    """Every catalog row's plan for the window, cheapest first (an interruptible one at its P90 total: the decision
    compares offers on the pessimistic figure); on a tie the shorter commitment first."""
    plans = [plan for plan in (plan_for(offer, hours, gpus, deliverable_h) for offer in offers) if plan is not None]
    return sorted(plans, key=lambda p: (p.total, p.covered_hours, p.offer.gpu, p.offer.billing, p.offer.line))
