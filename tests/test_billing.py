"""Billing kinds behind one interface (core/money/billing/): each kind reads, covers, steps and describes its rows;
a new kind is one module and one registry line."""

from __future__ import annotations

import ast
from dataclasses import dataclass, fields
from decimal import ROUND_CEILING, Decimal

import pytest

from gpucost_mlflow.core.amounts import CENT
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money import billing
from gpucost_mlflow.core.money.billing.base import Billing, Cover, Terms, whole
from gpucost_mlflow.core.money.breakeven import Priced
from gpucost_mlflow.core.money.catalog import Package, load_catalog
from gpucost_mlflow.core.money.forecast import Forecast
from gpucost_mlflow.core.money.plans import covering_plans, to_hours
from tests.helpers import ROOT

pytestmark = pytest.mark.unit

PACKAGE_DIR = ROOT / "gpucost_mlflow"
HEADER = "provider,catalog_version,gpu,device_names,gpus_per_lot,days,price_per_lot,currency,source,billing,months\n"


@dataclass(frozen=True)
class MonthlyTerms(Terms):
    """A monthly row's own terms: the months one term commits to (tests only)."""

    months: int


class MonthlyBilling(Billing):
    """A kind a provider might add: whole 30-day months, paid for the month started (tests only)."""

    name = "monthly"
    columns = ("months",)

    def read(self, path, line, values):
        if values["days"]:
            raise GpucostError(f"{path}:{line}: days must be empty on a monthly row")
        months = whole(path, line, "months", values.get("months", ""))
        return {"days": 30 * months, "terms": MonthlyTerms(months)}

    def cover(self, offer, hours, lots, deliverable_h, work):
        period = Decimal(offer.days * 24)
        periods = int((hours / period).to_integral_value(rounding=ROUND_CEILING))
        return Cover(periods, None, period * periods, (offer.price_per_lot * lots * periods).quantize(CENT))

    def step_hours(self, offer):
        return offer.days * 24.0, 0.0

    def describe(self, offer):
        return f"{offer.gpu} {offer.terms.months}-month term"

    def head(self, plan, lots):
        return f"{plan.periods} x {plan.offer.terms.months}-month {plan.offer.gpu} term, {lots}"


def test_every_row_is_billed_by_the_kind_its_billing_column_names():
    assert list(billing.KINDS) == ["package", "hourly", "interruptible", "per_token"]
    assert billing.kind("hourly").by_the_hour and billing.kind("interruptible").by_the_hour
    assert not billing.kind("package").by_the_hour
    assert billing.owner("increment_hours") == "hourly" and billing.owner("restart_hours") == "interruptible"
    assert billing.owner("tier") == "per_token" and not billing.kind("per_token").per_lot


def test_a_kinds_own_terms_live_in_its_record_never_as_fields_of_a_catalog_row(tmp_path):
    own = {f.name for terms in (billing.HourlyTerms, billing.InterruptibleTerms, billing.PerTokenTerms) for f in fields(terms)}
    assert not {f.name for f in fields(Package)} & (own | set(billing.columns()))
    path = tmp_path / "prices.csv"
    path.write_text("provider,catalog_version,gpu,device_names,gpus_per_lot,days,price_per_lot,currency,source,billing,"
                    "min_hours,increment_hours,interruptions_per_day,restart_hours,interruptions_source,"
                    "price_per_million_input,price_per_million_output,tier,completion_window_hours\n"
                    "p,2026-12,g1,Some GPU,1,7,40,USD,test,package,,,,,,,,,\n"
                    "p,2026-12,g1,Some GPU,1,,1.5,USD,test,hourly,4,1,,,,,,,\n"
                    "p,2026-12,g1,Some GPU,1,,0.5,USD,test,interruptible,1,0.25,2,0.5,our month,,,,\n"
                    "p,2026-12,g1,Some GPU,1,,,USD,test,per_token,,,,,,0.15,0.60,batch,24\n")
    week, hourly, spot, tokens = load_catalog(path).packages
    assert week.terms is None
    assert hourly.terms == billing.HourlyTerms(Decimal(4), Decimal(1))
    assert spot.terms == billing.InterruptibleTerms(Decimal(1), Decimal("0.25"), Decimal(2), Decimal("0.5"), "our month")
    assert tokens.terms == billing.PerTokenTerms(Decimal("0.15"), Decimal("0.60"), "batch", Decimal(24))
    assert [p.billed_as for p in (week, hourly, spot, tokens)] == ["7 days", "hourly rate", "hourly rate", "batch tier"]


def test_a_billing_kind_added_to_the_registry_is_read_covered_stepped_and_described(tmp_path, monkeypatch):
    monkeypatch.setitem(billing.KINDS, "monthly", MonthlyBilling())
    path = tmp_path / "prices.csv"
    path.write_text(HEADER + "p,2026-12,g1,Some GPU,1,,100,USD,test,monthly,2\n"
                             "p,2026-12,g1,Some GPU,1,7,40,USD,test,package,\n")
    catalog = load_catalog(path)
    term, week = catalog.for_gpu("g1")
    assert term.billing == "monthly" and term.days == 60 and term.describe() == "g1 2-month term"
    plans = covering_plans([term, week], to_hours(1000.0))  # 1,000 h: 1 two-month term, or 6 weeks
    assert [(p.offer.billing, p.total) for p in plans] == [("monthly", Decimal("100.00")), ("package", Decimal("240.00"))]
    assert plans[0].describe() == "1 x 2-month g1 term, 1 lot: 100.00 USD"
    forecast = Forecast(setup_h=0.0, waiting_h=0.0, comparisons_h=0.0, comparisons=0, comparisons_estimated=0,
                        restarts=0, startup_h=0.0, deliverables=1, per_deliverable_h=(1.0, 1.0, 1.0))
    assert Priced("c", forecast, (term,))._steps() == [(1440.0, 0.0)]
    path.write_text(HEADER + "p,2026-12,g1,Some GPU,1,7,40,USD,test,package,3\n")
    with pytest.raises(GpucostError, match=":2: months is for monthly rows, this one is billed package"):
        load_catalog(path)


def test_billing_kinds_are_compared_only_inside_core_money_billing():
    """One seam: no module outside core/money/billing/ compares a value with a billing kind's name."""
    names = {"package", "hourly", "interruptible", "per_token"}
    found = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        where = path.relative_to(PACKAGE_DIR).as_posix()
        if where.startswith("core/money/billing/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                for side in [node.left, *node.comparators]:
                    values = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
                    found += [f"{where}:{node.lineno} {v.value!r}" for v in values
                              if isinstance(v, ast.Constant) and v.value in names]
    assert not found, "; ".join(found)


@pytest.mark.parametrize(("hours", "said"), [
    (Decimal(14634) / Decimal(3600), "4.065"),  # per-second billing on whole milli-hours: no 28-digit tail
    (Decimal(12), "12"), (Decimal("0.5"), "0.5"), (Decimal(100), "100"),
    (Decimal(14505) / Decimal(3600), "4.0292"),
])
def test_billed_hours_read_as_hours_never_a_decimal_divisions_trailing_zeros(hours, said):
    from gpucost_mlflow.core.money.billing.hourly import hours_text

    assert hours_text(hours) == said
