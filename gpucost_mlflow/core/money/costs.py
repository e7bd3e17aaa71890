"""Committed cost: a package is paid whole (a short run never turns it into an hourly bill); cost per validated corpus
only from accepted results."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from gpucost_mlflow.core.amounts import CENT
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money.catalog import Package


@dataclass(frozen=True)
class Commitment:
    """A package bought for a number of lots: what is committed whatever share of it is used."""

    package: Package
    lots: int

    @property
    def total(self) -> Decimal:
        """Rental budget = price per lot x number of lots."""
        return (self.package.price_per_lot * self.lots).quantize(CENT, rounding=ROUND_HALF_UP)

    @property
    def gpus(self) -> int:
        """GPUs held: a lot already holds gpus_per_lot cards (never multiplied by two again)."""
        return self.package.gpus_per_lot * self.lots


def commit(package: Package, lots: int) -> Commitment:
    if not isinstance(lots, int) or lots < 1:
        raise GpucostError(f"lots must be a positive whole number, got {lots!r}")
    return Commitment(package, lots)


def cost_per_validated_corpus(total: Decimal, accepted: int) -> Decimal | None:
    """Total / distinct accepted deliverables; None (undefined) when none was accepted."""
    if not isinstance(accepted, int) or accepted < 0:
        raise GpucostError(f"accepted results must be a whole number >= 0, got {accepted!r}")
    if accepted == 0:
        return None
    return (total / accepted).quantize(CENT, rounding=ROUND_HALF_UP)


def money(amount: Decimal, currency: str) -> str:
    """2,071.00 USD."""
    return f"{amount:,.2f} {currency}"
