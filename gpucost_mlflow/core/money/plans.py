"""Covering plans: every way a catalog covers a window (length x consecutive periods x lots), cheapest first.

Each row is covered by its billing kind (core/money/billing/): a fixed package is bought whole, period after period
(never an automatic extension); an hourly rate bills max(min_hours, the window rounded up to increment_hours); an
interruptible rate is billed the same way for the window its interruptions lengthen, committed at the 90th
percentile of their count, the expected total beside it (core/money/interruptions.py); a per-token row prices the
planned work from the measured tokens, over the forecast window (list tier) or setup + its completion window (batch
tier), and refuses, with the reason, a work it cannot price. Lots = ceil(GPUs used / GPUs per lot); a lot's unused
GPUs are said, never counted as extra throughput.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money.billing.base import NO_WORK, Work, to_hours
from gpucost_mlflow.core.money.billing.per_token import PerTokenTerms
from gpucost_mlflow.core.money.catalog import Package
from gpucost_mlflow.core.money.interruptions import Rework

__all__ = ["NO_WORK", "Plan", "Work", "covering_plans", "lots_for", "parse_hours", "parse_positive", "plan_for",
           "refusals", "to_hours"]


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
    covered_hours: Decimal  # hours the plan pays for: whole packages, or the hours billed
    total: Decimal
    expected_total: Decimal | None = None  # an interruptible row: the total at the expected count of interruptions
    expected_billed: Decimal | None = None
    rework: Rework | None = None
    work: Work = NO_WORK  # what it was bought for: a per-token plan's planned inputs and measured tokens

    @property
    def currency(self) -> str:
        return self.offer.currency

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
        head = self.offer.kind.head(self, f"{self.lots} lot{'s' if self.lots > 1 else ''}")
        head += f" on {self.offer.offer}" if self.offer.offer else ""
        note = f"; {self.note}" if self.note else ""
        return f"{head}: {self.total:,.2f} {self.currency}{self.offer.kind.tail(self)}{note}"

    def as_dict(self) -> dict:
        """The plan as JSON-ready values (money and hours as decimal strings)."""
        tokens = self.offer.terms if isinstance(self.offer.terms, PerTokenTerms) else None
        return {
            "gpu": self.offer.gpu,
            "provider": self.offer.provider,
            "instance": self.offer.instance,
            "region": self.offer.region,
            "catalog_version": self.offer.catalog_version,
            "billing": self.offer.billing,
            "package_days": self.offer.days,
            "periods": self.periods,
            "lots": self.lots,
            "gpus_per_lot": self.offer.gpus_per_lot,
            "gpus_used": self.gpus,
            "unused_gpus": self.unused_gpus,
            "window_hours": str(self.window_hours),
            "hours_billed": str(self.hours_billed) if self.hours_billed is not None else None,
            "covered_hours": str(self.covered_hours),
            "price_per_lot": str(self.offer.price_per_lot) if self.offer.kind.per_lot else None,
            "tier": tokens.tier if tokens else "",
            "price_per_million_input": _text(tokens.input_per_million) if tokens else None,
            "price_per_million_output": _text(tokens.output_per_million) if tokens else None,
            "completion_window_hours": _text(tokens.completion_window_hours) if tokens else None,
            "planned_inputs": self.work.inputs if not self.offer.kind.per_lot else None,
            "total": str(self.total),
            "expected_total": str(self.expected_total if self.expected_total is not None else self.total),
            "p90_total": str(self.total),
            "interruption_assumption": self.rework.assumption if self.rework else "",
            "currency": self.currency,
            "example_price": self.offer.example,
            "note": self.note,
        }


def _text(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def plan_for(offer: Package, hours: Decimal, gpus: int, deliverable_h: float = 0.0, work: Work = NO_WORK
             ) -> Plan | None:
    """The one plan this catalog row gives for the window, as its billing kind covers it: the fewest consecutive
    periods, or the billed hours; an interruptible row at its P90 window (deliverable_h: what an interruption loses at
    most), None when its interruptions would outrun the work; a per-token row for the work, None when it refuses it
    (`refusals` says why)."""
    if hours <= 0:
        raise GpucostError(f"a window must last more than 0 hours, got {hours}")
    if offer.kind.refusal(offer, work):
        return None
    lots = lots_for(gpus, offer.gpus_per_lot)
    window = offer.kind.window(offer, hours, work)
    cover = offer.kind.cover(offer, window, lots, deliverable_h, work)
    if cover is None:
        return None
    return Plan(offer, window, gpus, lots, cover.periods, cover.hours_billed, cover.covered_hours, cover.total,
                cover.expected_total, cover.expected_billed, cover.rework, work)


def refusals(offers: list[Package], work: Work) -> list[str]:
    """Each row that cannot price this work, with why: 'l4 batch tier per token (...): batch tier's 24 h completion
    window does not fit the 20 h deadline'."""
    return [f"{offer.describe()}: {why}" for offer in offers for why in [offer.kind.refusal(offer, work)] if why]


def covering_plans(offers: list[Package], hours: Decimal, gpus: int = 1, deliverable_h: float = 0.0,
                   work: Work = NO_WORK) -> list[Plan]:
    """Every catalog row's plan for the window, cheapest first (an interruptible one at its P90 total: the decision
    compares offers on the pessimistic figure); on a tie the shorter commitment first. A row that refuses the work
    (a per-token row without measured tokens, a batch tier past the deadline) gives none."""
    plans = [plan for plan in (plan_for(offer, hours, gpus, deliverable_h, work) for offer in offers)
             if plan is not None]
    return sorted(plans, key=lambda p: (p.total, p.covered_hours, p.offer.gpu, p.offer.billing, p.offer.line))
