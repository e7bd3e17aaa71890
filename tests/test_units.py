"""What the money buys per unit and how much more the committed plan holds (docs/costs.md, the scenario table)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpucost_mlflow.core.money import units
from gpucost_mlflow.core.money.billing import HourlyTerms
from gpucost_mlflow.core.money.catalog import Package, load_catalog
from gpucost_mlflow.core.money.forecast import Forecast
from gpucost_mlflow.core.money.plans import covering_plans, to_hours
from tests.helpers import CATALOG
from tests.scenario import RTX, report
from tests.test_report import protocol_like_shipped

pytestmark = pytest.mark.unit

H = 3600.0


def forecast(per_deliverable_slowest_h: float, fixed_h: float, deliverables: int = 1) -> Forecast:
    return Forecast(setup_h=fixed_h, waiting_h=0.0, comparisons_h=0.0, comparisons=0, comparisons_estimated=0,
                    restarts=0, startup_h=0.0, deliverables=deliverables,
                    per_deliverable_h=(per_deliverable_slowest_h, per_deliverable_slowest_h, per_deliverable_slowest_h))


def test_110_usd_for_4_corpora_of_1000_inputs_is_27_50_per_1000_inputs():
    assert units.per_1000_inputs(Decimal("110.00"), 4, 1000) == Decimal("27.50")
    assert units.per_1000_inputs(Decimal("110.00"), 0, 1000) is None


def test_a_unit_cost_keeps_two_significant_digits_and_the_planning_budget_is_always_per_million_planned_inputs():
    cost = units.per_1000_inputs(Decimal("0.50"), 1063, 1000)
    assert cost == Decimal("0.00047") and units.money(cost, "USD") == "0.00047 USD"  # 0.0005 would be one digit
    assert units.per_million_inputs(Decimal("0.50"), 1063, 1000) == Decimal("0.47")
    demo = units.per_million_inputs(Decimal("0.60"), 4000, 500)  # the demo: 0.60 USD over 2 million planned inputs
    assert units.planned_inputs(demo, "USD") == "0.30 USD per million planned inputs"
    # One unit whatever the size (issue 66): 110.00 over 4,000 planned inputs is never '27.50 per 1,000'.
    dear = units.per_million_inputs(Decimal("110.00"), 4, 1000)
    assert units.planned_inputs(dear, "USD") == "27,500.00 USD per million planned inputs"


def test_the_cost_per_million_output_tokens_comes_from_the_measured_tokens_per_input():
    # 110.00 for 4 corpora of 1,000 inputs at 2.5 output tokens each: 10,000 tokens, 11,000.00 per million.
    assert units.per_million_tokens(Decimal("110.00"), 4, 1000, 2.5) == Decimal("11000.00")
    assert units.per_million_tokens(Decimal("110.00"), 4, 1000, None) is None


def test_a_7_day_package_bought_for_4_corpora_holds_328_at_half_an_hour_each():
    # 168 h paid, 4 h fixed, 0.5 h per corpus at the slowest pass: 328 corpora, 324 more than declared.
    plan = covering_plans(load_catalog(CATALOG).for_gpu("rtx-4090"), to_hours(6.0), 1)[0]
    found = units.spare(forecast(0.5, 4.0, deliverables=4), plan)
    assert (found.capacity, found.spare) == (328, 324)
    assert units.per_1000_inputs(plan.total, found.capacity, 1000) == Decimal("0.34")


def test_the_demo_what_if_plan_holds_1063_corpora_in_its_5_billed_hours():
    # The demo's what-if: this machine hourly (min 1 h, per 1 h) at 0.10, a 4.114 h window (4 h setup, comparisons
    # and start-up), 3.0 s per corpus at the slowest pass: 5 h billed hold (5 - 4.114) h / 3.0 s = 1,063 corpora.
    hourly = Package("this-machine", "what-if", "this-machine", ("AMD EPYC",), 1, None, Decimal("0.10"), "USD",
                     "example price", 1, billing="hourly", terms=HourlyTerms(Decimal(1), Decimal(1)))
    window = forecast(3.0 / H, 4.114)
    plan = covering_plans([hourly], to_hours(window.high_hours), 1)[0]
    assert plan.hours_billed == Decimal(5) and plan.total == Decimal("0.50")
    found = units.spare(window, plan)
    assert (found.capacity, found.spare) == (1063, 1062)


def test_balance_and_decision_note_carry_unit_costs_and_spare_capacity(experiment, tmp_path):
    for seconds in (100.0, 101.0, 99.0, 100.5, 100.2):
        experiment("batch8", RTX, seconds)
    built, balance = report(protocol_path=protocol_like_shipped(tmp_path, drop_deadline=True, expected=4))
    row = balance[balance["variant"] == "batch8"].iloc[0]
    assert row["committed_cost"] == "110.00" and row["forecast_cost_per_million_planned_inputs"] == "27500.00"
    assert row["forecast_cost_per_million_planned_output_tokens"] == ""
    assert row["forecast_cost_per_million_planned_output_tokens_reason"] == units.NO_TOKENS
    assert row["validated_cost_per_1000_inputs"] == units.NO_RESULT
    assert row["spare_deliverables"] > 1000 and row["plan_capacity_deliverables"] == row["spare_deliverables"] + 4
    assert ("Planning budget, a forecast from the planned volume (no cost per result yet: no deliverable accepted): "
            "27,500.00 USD per million planned inputs; the same 110.00 USD would cover up to") in built.decision
    assert "per 1,000 inputs" not in built.decision.split(". Reason")[0]  # nothing of it on the result line


def test_a_forecast_capacity_is_said_to_three_significant_figures_rounded_down_never_to_six_digits():
    # The demo's 260,620 corpora (issue 66): a forecast said "about 260,000"; the metrics keep the count exactly.
    from gpucost_mlflow.core import approximate

    assert units.Spare(260_620, 4_000).said() == "about 260,000 corpora (256,000 more)"
    assert units.Spare(2_258, 2_000).said() == "about 2,250 corpora (258 more)"
    assert units.Spare(53_003, 1).said() == "about 53,000 corpora (53,000 more)"  # never "(53,002 more)"
    assert units.Spare(328, 4).said() == "328 corpora (324 more)"  # three figures already
    assert units.Spare(2_004, 2_000).said() == "2,004 corpora (4 more)"  # rounding would hide the spare
    assert (approximate.at_most(160_497), approximate.at_least(160_497)) == (160_000, 161_000)
    assert approximate.at_least(1_225) == 1_230 and approximate.at_least(999) == 999 and approximate.at_most(7) == 7
