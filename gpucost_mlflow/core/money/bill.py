"""The bill: what was actually paid for the chosen plan (`gpucost bill`), beside what the decision committed.

Pure: the amount a user typed, the currency it must be in, the note on one line, and the record read back
from the decision run (tracking/decision_run.py writes and reads it; report/bill.py says it in the report).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from gpucost_mlflow.core.amounts import CENT
from gpucost_mlflow.core.errors import GpucostError

# Characters of a bill's note (one line): an invoice number and a word on why the amount differs.
NOTE_LIMIT = 500
# The UTC time a bill was recorded, to the minute: 2026-12-01T10:00Z.
AT_FORMAT = "%Y-%m-%dT%H:%MZ"


@dataclass(frozen=True)
class Bill:
    """What was paid for the plan chosen on one decision run, in the plan's currency, recorded at `at` (UTC).

    committed: that run's committed cost (None where the run has none), so a later report compares the bill with
    the plan it paid for, not with whatever a later decision chose."""

    paid: Decimal
    currency: str
    note: str
    at: str
    run_id: str
    committed: Decimal | None = None


def parse_paid(text: str, name: str = "--paid") -> Decimal:
    """A paid amount typed by a user: a finite decimal >= 0 (a credit may make it 0), to the cent (half up)."""
    try:
        value = Decimal(str(text).strip())
    except InvalidOperation:
        raise GpucostError(f"{name} must be an amount >= 0 (like 118.40), got '{text}'; nothing recorded") from None
    if not value.is_finite() or value < 0:
        raise GpucostError(f"{name} must be an amount >= 0 (like 118.40), got '{text}'; nothing recorded")
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def currency_of(text: str, plan_currency: str) -> str:
    """The bill's currency, which must be the plan's: one comparison uses one currency."""
    currency = (text or "").strip().upper()
    if currency != plan_currency.strip().upper():
        raise GpucostError(f"--currency '{(text or '').strip()}' is not the plan's currency ({plan_currency}): a bill "
                           f"is recorded in the currency the plan was priced in; nothing recorded")
    return plan_currency


def note_of(text: str | None) -> str:
    """The note on one line (white space folded), at most NOTE_LIMIT characters."""
    note = " ".join((text or "").split())
    if len(note) > NOTE_LIMIT:
        raise GpucostError(f"--note is {len(note)} characters, at most {NOTE_LIMIT}; nothing recorded")
    return note


def stamp(when: dt.datetime | None = None) -> str:
    """The UTC time of a bill, to the minute (2026-12-01T10:00Z)."""
    return (when or dt.datetime.now(dt.timezone.utc)).astimezone(dt.timezone.utc).strftime(AT_FORMAT)


def difference(paid: Decimal, committed: Decimal) -> tuple[Decimal, Decimal | None]:
    """Paid minus committed, to the cent, and that as a percentage of committed to 0.1 (None when nothing was
    committed)."""
    delta = (paid - committed).quantize(CENT, rounding=ROUND_HALF_UP)
    if committed == 0:
        return delta, None
    return delta, (delta * 100 / committed).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
