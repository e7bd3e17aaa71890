"""The bill in the report: what was committed against what was paid, and the difference (pure).

The bill is read from the decision run it was recorded on (tracking/decision_run.py, `latest_bill`); it carries
that run's committed cost, so a later report compares it with the plan that was paid for.
"""

from __future__ import annotations

from decimal import Decimal

from gpucost_mlflow.core.money.bill import Bill, difference
from gpucost_mlflow.core.money.costs import money


def bill_lines(bill: Bill | None, committed: Decimal | None = None, currency: str | None = None) -> list[str]:
    """The report's Markdown lines on the bill, nothing when none was recorded:

    "Committed 110.00 USD; paid 118.40 USD (+8.40 USD, +7.6 %), recorded 2026-12-01T10:00Z: invoice 4411".

    committed and currency default to the bill's own decision run's committed cost and the bill's currency; a
    committed cost that is missing or in another currency gives the paid amount alone, saying why."""
    if bill is None:
        return []
    committed = bill.committed if committed is None else committed
    currency = currency or bill.currency
    recorded = f"recorded {bill.at}" + (f": {bill.note}" if bill.note else "")
    paid = money(bill.paid, bill.currency)
    if committed is None:
        return [f"Paid {paid} (no committed cost to compare it with), {recorded}"]
    if currency != bill.currency:
        return [(f"Paid {paid} (the committed {money(committed, currency)} is in another currency: no difference), "
                f"{recorded}")]
    delta, percent = difference(bill.paid, committed)
    shown = f"{_signed(delta, '.2f')} {currency}" + ("" if percent is None else f", {_signed(percent, '.1f')} %")
    return [f"Committed {money(committed, currency)}; paid {paid} ({shown}), {recorded}"]


def _signed(value: Decimal, digits: str) -> str:
    """+8.40, -1.60, 0.00: a sign on every difference but none."""
    return f"{value:,{digits}}" if value == 0 else f"{value:+,{digits}}"


def fleet_total_line(realized: dict[str, Decimal | None], partial: bool, worst: Decimal | None,
                     committed: Decimal | None, currency: str, plan_said: str) -> str:
    """The fleet's realized rental beside its worst case and the latest decision's committed plan, an empty figure
    said with why: 'Fleet realized 4.12 USD of a worst case 13.40 USD; the latest decision (run 3f2a) commits ...'."""
    known = [amount for amount in realized.values() if amount is not None]
    empty = [gpu for gpu, amount in realized.items() if amount is None]
    if not known:
        head = f"Fleet realized: empty (no GPU type's rental is known yet: {', '.join(empty)})"
    else:
        head = (f"Fleet realized {money(sum(known, Decimal(0)), 'USD')}"
                + (" so far (partial: a job is still running)" if partial else "")
                + (f", without {', '.join(empty)} (empty)" if empty else ""))
    against = f" of a worst case {money(worst, 'USD')}" if worst is not None else " (no worst case recorded)"
    if committed is None:
        plan = f"no committed plan to set it beside: {plan_said}"
    else:
        plan = f"the latest decision ({plan_said}) commits {money(committed, currency)} for the work itself"
    return f"{head}{against}; {plan}"
