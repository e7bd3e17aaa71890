"""Committed cost against volume (core/money/curve.py): the steps of the cheapest covering plan at the slowest pass,
against known answers worked by hand, late volumes marked against the deadline."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpucost_mlflow.core.money.billing import HourlyTerms
from gpucost_mlflow.core.money.breakeven import Priced
from gpucost_mlflow.core.money.catalog import Package
from gpucost_mlflow.core.money.curve import Step, steps
from gpucost_mlflow.core.money.forecast import Forecast

pytestmark = pytest.mark.unit


def forecast(fixed_h: float, slowest_h: float) -> Forecast:
    """Fixed hours (setup) and hours per deliverable at the slowest pass; nothing else."""
    return Forecast(setup_h=fixed_h, waiting_h=0.0, comparisons_h=0.0, comparisons=0, comparisons_estimated=0,
                    restarts=0, startup_h=0.0, deliverables=1, per_deliverable_h=(slowest_h, slowest_h, slowest_h))


def hourly(price: str) -> Package:
    return Package(provider="p", catalog_version="v", gpu="cpu", device_names=("CPU",), gpus_per_lot=1, days=None,
                   price_per_lot=Decimal(price), currency="USD", source="test", line=2, billing="hourly",
                   terms=HourlyTerms(min_hours=Decimal(1), increment_hours=Decimal(1)))


def weekly(price: str) -> Package:
    return Package(provider="p", catalog_version="v", gpu="rtx-4090", device_names=("RTX",), gpus_per_lot=1, days=7,
                   price_per_lot=Decimal(price), currency="USD", source="test", line=3)


def cost_at(curve: list[Step], volume: int) -> Decimal:
    """The curve's cost at a volume: the last step at or below it."""
    return [step for step in curve if step.volume <= volume][-1].cost


def test_an_hourly_curve_steps_at_each_billed_hour_and_is_late_past_the_deadline():
    # 2 h fixed + 0.5 h per deliverable at 1.00 USD per hour billed: 1-2 -> 3 h, 3-4 -> 4 h, 5-6 -> 5 h.
    # A deadline 4 h after the start is met up to 4 deliverables (2 + 4 x 0.5 = 4 h).
    curve = steps(Priced("a", forecast(2.0, 0.5), (hourly("1.00"),), deadline_h=4.0), 1, 6)
    assert curve == [Step(1, Decimal("3.00"), True), Step(3, Decimal("4.00"), True), Step(5, Decimal("5.00"), False)]


def test_a_weekly_package_curve_buys_a_second_week_once_the_window_passes_168_hours():
    # 4 h fixed + 1 h per deliverable: 164 deliverables fill one 7-day package (168 h), the 165th buys a second.
    curve = steps(Priced("b", forecast(4.0, 1.0), (weekly("110.00"),)), 1, 400)
    assert curve == [Step(1, Decimal("110.00"), True), Step(165, Decimal("220.00"), True),
                     Step(333, Decimal("330.00"), True)]
    assert cost_at(curve, 164) == Decimal("110.00") and cost_at(curve, 165) == Decimal("220.00")


def test_the_cheapest_row_prices_each_volume_and_the_curve_follows_it():
    # Hourly at 2.00 USD beats the 110.00 USD week up to 55 billed hours: 4 h fixed + 51 x 1 h = 55 h -> 110.00
    # either way (the tie goes to the shorter commitment), then the week is cheaper until 164 deliverables.
    curve = steps(Priced("c", forecast(4.0, 1.0), (hourly("2.00"), weekly("110.00"))), 1, 200)
    assert curve[0] == Step(1, Decimal("10.00"), True)
    assert cost_at(curve, 50) == Decimal("108.00") and cost_at(curve, 51) == Decimal("110.00")
    assert cost_at(curve, 164) == Decimal("110.00") and cost_at(curve, 165) == Decimal("220.00")


def test_a_long_range_is_priced_at_log_spaced_volumes_within_the_budget():
    curve = steps(Priced("d", forecast(2.0, 0.01), (hourly("1.00"),)), 1, 1_000_000, budget=50)
    assert 1 < len(curve) <= 50 and curve[0].volume == 1
    assert [s.volume for s in curve] == sorted(s.volume for s in curve)
    assert cost_at(curve, 1_000_000) == Decimal("10002.00")  # 2 h + 10,000 h, billed whole


def test_a_volume_range_that_starts_below_one_is_refused():
    with pytest.raises(ValueError):
        steps(Priced("e", forecast(2.0, 0.5), (hourly("1.00"),)), 0, 5)
