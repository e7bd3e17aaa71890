"""How a catalog row is billed: the interface every billing kind implements (one module per kind, one registry in
`__init__.py`), and the checks its cells share.

A kind says which optional catalog columns it reads and checks them, how many hours or periods a window costs on
one of its rows, where its price steps (the cost curve and the break-evens read that), and how a row and a plan of
it are described. Pure arithmetic on Decimal: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING

from gpucost_mlflow.core.errors import GpucostError

if TYPE_CHECKING:
    from gpucost_mlflow.core.money.catalog import Package
    from gpucost_mlflow.core.money.interruptions import Rework
    from gpucost_mlflow.core.money.plans import Plan

CENT = Decimal("0.01")
HOUR_QUANTUM = Decimal("0.000001")  # 3.6 ms: float noise below it never bills another increment


def to_hours(value: float | Decimal) -> Decimal:
    """A window length as an exact Decimal of hours (floats rounded to the micro-hour)."""
    if isinstance(value, Decimal):
        return value
    return Decimal(repr(float(value))).quantize(HOUR_QUANTUM, rounding=ROUND_HALF_UP)


@dataclass(frozen=True)
class Cover:
    """What one row bills for a window: periods bought (1 for an hourly rate), hours billed (None: whole periods),
    the hours paid for, the committed total; an interruptible row adds its expected figures and the rework."""

    periods: int
    hours_billed: Decimal | None
    covered_hours: Decimal
    total: Decimal
    expected_total: Decimal | None = None
    expected_billed: Decimal | None = None
    rework: Rework | None = None


class Billing:
    """One billing kind. `columns`: the optional catalog columns its rows read (a value in any other kind's column
    is refused); `by_the_hour`: whether price_per_lot is one lot for one hour."""

    name: str = ""
    by_the_hour: bool = False
    columns: tuple[str, ...] = ()

    def read(self, path: Path, line: int, values: dict[str, str]) -> dict:
        """The row's billing fields (days, min/increment hours, ...) checked: a one-line error naming file and line."""
        raise NotImplementedError

    def cover(self, offer: Package, hours: Decimal, lots: int, deliverable_h: float) -> Cover | None:
        """What the row bills to cover a window of `hours` with `lots` lots (None: it cannot cover it)."""
        raise NotImplementedError

    def step_hours(self, offer: Package) -> tuple[float, float]:
        """(length, minimum) in hours: the row's price changes every `length` hours above `minimum`."""
        raise NotImplementedError

    def describe(self, offer: Package) -> str:
        """The row in a few words: 'rtx-4090 7-day package', 'cpu hourly (min 1 h, per 1 h)'."""
        raise NotImplementedError

    def head(self, plan: Plan, lots: str) -> str:
        """A plan of the row without its total: '2 x 7-day rtx-4090 package, 2 lots'."""
        raise NotImplementedError


def _cell(path: Path, line: int, column: str, text: str, convert, what: str):
    try:
        return convert(text)
    except (ValueError, InvalidOperation):
        raise GpucostError(f"{path}:{line}: {column} '{text}' is not {what}") from None


def whole(path: Path, line: int, column: str, text: str) -> int:
    """A cell holding a whole number >= 1."""
    value = _cell(path, line, column, text, int, "a positive whole number")
    if value < 1:
        raise GpucostError(f"{path}:{line}: {column} '{text}' is not a positive whole number")
    return value


def number(path: Path, line: int, column: str, text: str) -> Decimal:
    """A cell holding a finite decimal number."""
    value = _cell(path, line, column, text, Decimal, "a number")
    if not value.is_finite():
        raise GpucostError(f"{path}:{line}: {column} '{text}' is not a number")
    return value


def hours(path: Path, line: int, column: str, text: str) -> Decimal:
    """A cell holding hours > 0 that an hourly row needs."""
    if not text:
        raise GpucostError(f"{path}:{line}: empty {column} (an hourly row needs min_hours and increment_hours)")
    value = number(path, line, column, text)
    if value <= 0:
        raise GpucostError(f"{path}:{line}: {column} '{text}' must be > 0")
    return value
