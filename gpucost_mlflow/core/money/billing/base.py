"""How a catalog row is billed: the interface every billing kind implements (one module per kind, one registry in
`__init__.py`), and the checks its cells share.

A kind says which optional catalog columns it reads and checks them, how many hours or periods a window costs on
one of its rows (or, billed per token, what the planned work costs), the window a plan of it spans and why it cannot
price a work, where its price steps (the cost curve and the break-evens read that), and how a row and a plan of it
are described. Pure arithmetic on Decimal: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING

from gpucost_mlflow.core.errors import GpucostError

if TYPE_CHECKING:
    from gpucost_mlflow.core.money.catalog import Package
    from gpucost_mlflow.core.money.interruptions import Rework
    from gpucost_mlflow.core.money.plans import Plan

HOUR_QUANTUM = Decimal("0.000001")  # 3.6 ms: float noise below it never bills another increment


def to_hours(value: float | Decimal) -> Decimal:
    """A window length as an exact Decimal of hours (floats rounded to the micro-hour)."""
    if isinstance(value, Decimal):
        return value
    return Decimal(repr(float(value))).quantize(HOUR_QUANTUM, rounding=ROUND_HALF_UP)


@dataclass(frozen=True)
class Work:
    """What a plan is bought for beyond its window: the planned volume, the tokens the accepted passes measured per
    input (None: not measured), the declared setup and the hours from the planned start to the deadline (None: none).
    A row billed by the hour reads none of it; a row billed per token prices it."""

    deliverables: int = 0
    inputs_per_deliverable: int | None = None
    prompt_tokens: float | None = None  # median tokens_prompt (or an encoder's tokens_input) per input
    generated_tokens: float | None = None  # median tokens_generated per input
    setup_h: float = 0.0
    deadline_h: float | None = None

    @property
    def inputs(self) -> int | None:
        """The planned inputs: deliverables x inputs per deliverable (None when the corpus size is not declared)."""
        return None if self.inputs_per_deliverable is None else self.deliverables * self.inputs_per_deliverable

    def at(self, deliverables: int) -> Work:
        """The same work at another volume (break-even and the cost curve read volumes other than the declared)."""
        return replace(self, deliverables=deliverables)


NO_WORK = Work()  # a window priced alone (`gpucost plan`, `gpucost window`): nothing to price per token


@dataclass(frozen=True)
class Terms:
    """A billing kind's own terms, read from the catalog columns it owns: each kind's module holds its subclass
    (HourlyTerms, PerTokenTerms, ...), so a catalog row carries one `terms` record rather than every kind's fields."""


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
    is refused); `by_the_hour`: whether price_per_lot is one lot for one hour; `per_lot`: whether price_per_lot is
    the row's price at all (a per-token row leaves it empty); `spare_capacity`: whether a plan's paid hours may hold
    more deliverables than declared (a bill per token grows with each one instead); `verb`: what the card's first
    line tells the reader to do with a plan of it."""

    name: str = ""
    verb: str = "Rent"
    by_the_hour: bool = False
    per_lot: bool = True
    spare_capacity: bool = True
    columns: tuple[str, ...] = ()

    def read(self, path: Path, line: int, values: dict[str, str]) -> dict:
        """The row's `days` and `terms` (the kind's own Terms record, None for a kind with none) checked: a one-line
        error naming file and line."""
        raise NotImplementedError

    def billed_as(self, offer: Package) -> str:
        """What sets the row apart from its provider's other rows of the GPU, instance and region (a second one is a
        duplicate): '7 days', 'hourly rate', 'list tier'."""
        return f"{self.name} row"

    def cover(self, offer: Package, hours: Decimal, lots: int, deliverable_h: float, work: Work) -> Cover | None:
        """What the row bills to cover a window of `hours` with `lots` lots for the work (None: it cannot cover it)."""
        raise NotImplementedError

    def window(self, offer: Package, hours: Decimal, work: Work) -> Decimal:
        """The hours a plan of the row spans: the forecast window `hours` (the work at the measured rate) unless the
        row bounds it otherwise (a batch tier: setup + its completion window)."""
        return hours

    def elsewhere(self, offer: Package, device: str, variant: str) -> str:
        """Why the row cannot price the variant's work measured on `device`, and what would measure it ('' when it
        can): a hosted tier prices only the work its own endpoint did."""
        return ""

    def refusal(self, offer: Package, work: Work) -> str:
        """Why the row cannot price this work ('' when it can): tokens not measured, a window past the deadline."""
        return ""

    def price(self, offer: Package) -> str:
        """The row's price in words: '1.50 USD per lot'."""
        return f"{offer.price_per_lot:,.2f} {offer.currency} per lot"

    def tail(self, plan: Plan) -> str:
        """What follows a plan's total ('' for a rental: its head said it): ' for 4,000 planned inputs'."""
        return ""

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
