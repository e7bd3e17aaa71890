"""Billing kinds, each one module behind one interface (base.py), chosen by a catalog row's `billing` column.

Adding a kind takes its module (a `Billing` subclass: the columns it reads into its own `Terms` record, how it covers
a window, where its price steps, how it is described) and one line of KINDS below.
"""

from __future__ import annotations

from gpucost_mlflow.core.money.billing.base import NO_WORK, Billing, Cover, Terms, Work
from gpucost_mlflow.core.money.billing.hourly import HOURLY, HourlyTerms
from gpucost_mlflow.core.money.billing.interruptible import INTERRUPTIBLE, InterruptibleTerms
from gpucost_mlflow.core.money.billing.package import PACKAGE
from gpucost_mlflow.core.money.billing.per_token import PER_TOKEN, PerTokenTerms

KINDS: dict[str, Billing] = {kind.name: kind for kind in (PACKAGE, HOURLY, INTERRUPTIBLE, PER_TOKEN)}
DEFAULT = PACKAGE.name  # a catalog without a billing column holds fixed packages

__all__ = ["DEFAULT", "HOURLY", "INTERRUPTIBLE", "KINDS", "NO_WORK", "PACKAGE", "PER_TOKEN", "Billing", "Cover",
           "HourlyTerms", "InterruptibleTerms", "PerTokenTerms", "Terms", "Work", "columns", "kind", "owner"]


def kind(name: str) -> Billing:
    """The billing kind of this name (a row's `billing`); KeyError when none is registered."""
    return KINDS[name]


def columns() -> tuple[str, ...]:
    """Every optional catalog column some kind reads, in registry order."""
    return tuple(dict.fromkeys(column for kind in KINDS.values() for column in kind.columns))


def owner(column: str) -> str:
    """The first kind whose rows read this optional column."""
    return next(k.name for k in KINDS.values() if column in k.columns)
