"""The price of measuring (issue 63): the machine time the campaigns held, priced under an offer's own terms, so the
money the measuring took stands beside the money the decision saves.

An hourly or interruptible row bills the measuring as a rental of its own (its minimum and increment apply). A
package row does not sell hours: measuring on a rented package is inside the package bought, unless the window and
the measuring together outgrow it, when the further periods are the price. A per-token row prices tokens, not machine
time: it gives no machine cost. A figure that is not priced is empty with why, never 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from gpucost_mlflow.core.money.billing.base import to_hours
from gpucost_mlflow.core.money.catalog import Package
from gpucost_mlflow.core.money.costs import money
from gpucost_mlflow.core.money.plans import Plan, covering_plans, plan_for

PER_TOKEN = "not priced: a per-token offer bills tokens, not machine time"
INSIDE_PACKAGE = "inside the committed package"
PACKAGE_ROWS = ("not priced here: measuring on a rented package is inside the package (the report says whether the "
                "committed one holds it beside the window)")


@dataclass(frozen=True)
class Price:
    """What the measuring cost at an offer: the amount (None: not priced, or nothing beyond the package bought) in
    the currency, and the words that say it: '0.10 USD at this offer', 'inside the committed package'."""

    amount: Decimal | None
    currency: str
    words: str


def at_plan(plan: Plan, hours: float | Decimal) -> Price:
    """The committed plan's offer's terms applied to the measuring hours (`plan_for` with the offer and the hours, on
    the plan's GPUs); a package, the periods the window and the measuring need beyond the plan's own."""
    currency, offer = plan.currency, plan.offer
    wanted = to_hours(hours)
    if not offer.kind.per_lot:
        return Price(None, currency, PER_TOKEN)
    if offer.kind.by_the_hour:
        found = plan_for(offer, wanted, plan.gpus) if wanted > 0 else None
        if found is None:
            return Price(None, currency, "not priced: no rental of this offer covers it")
        return Price(found.total, currency, f"{money(found.total, currency)} at this offer")
    both = plan_for(offer, plan.window_hours + wanted, plan.gpus)
    extra = both.total - plan.total if both is not None else None
    if not extra or extra <= 0:
        return Price(None, currency, INSIDE_PACKAGE)
    more = both.periods - plan.periods
    return Price(extra, currency, f"{money(extra, currency)} at this offer: {more} more {offer.days}-day "
                                  f"period{'s' if more > 1 else ''}, the package does not hold the window and it")


def at_offers(rows: Sequence[Package], hours: float | Decimal, gpus: int = 1, device: str = "",
              currency: str = "") -> Price:
    """A campaign's measuring at the cheapest by-the-hour row of its device (its rental's minimum and increment
    applied); a device whose rows are packages or per-token tiers only, or none, is not priced, with why."""
    wanted = to_hours(hours)
    plans = covering_plans([r for r in rows if r.kind.by_the_hour], wanted, gpus) if wanted > 0 else []
    if plans:
        cheapest = plans[0]
        return Price(cheapest.total, cheapest.currency, cheapest.describe())
    currency = rows[0].currency if rows else currency
    if any(r.kind.per_lot and not r.kind.by_the_hour for r in rows):
        return Price(None, currency, PACKAGE_ROWS)
    if rows:
        return Price(None, currency, PER_TOKEN)
    return Price(None, currency, f"not priced: no catalog row for {device or 'its device'}")


def hours_text(hours: float) -> str:
    """'0.11 h', '0.0042 h', '12.50 h': two decimals, or two significant digits below a tenth of an hour."""
    return f"{hours:,.2f} h" if hours >= 0.1 else f"{hours:.2g} h"


@dataclass(frozen=True)
class Spent:
    """The measuring a decision read: the hours its campaigns recorded (summed), how many campaigns recorded them and
    how many did not, and the devices they ran on."""

    hours: float
    campaigns: int
    unrecorded: int = 0
    devices: tuple[str, ...] = ()

    def words(self, price: Price | None) -> str:
        """'decided after 0.11 h of measuring (0.10 USD at this offer)', with 'at least' where a campaign recorded
        none and 'on 2 devices (... were it all at this offer)' where they ran on several."""
        least = "at least " if self.unrecorded else ""
        where = f" on {len(self.devices)} devices" if len(self.devices) > 1 else ""
        said = price.words if price is not None else ""
        if price is not None and price.amount is not None and len(self.devices) > 1:
            said = f"{money(price.amount, price.currency)} were it all at this offer"
        missing = (f"; {self.unrecorded} campaign{'s' if self.unrecorded > 1 else ''} recorded none"
                   if self.unrecorded else "")
        inside = f" ({said}{missing})" if said or missing else ""
        return f"decided after {least}{hours_text(self.hours)} of measuring{where}{inside}"
