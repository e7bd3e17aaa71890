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
