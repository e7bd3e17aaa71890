"""Covering plans and break-even (PROTOCOL §9-10): the scenarios with known answers listed in docs/costs.md."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from click.testing import CliRunner

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money.breakeven import Priced, break_even
from gpucost_mlflow.core.money.catalog import load_catalog
from gpucost_mlflow.core.money.forecast import Forecast
from gpucost_mlflow.core.money.plans import covering_plans, parse_hours, to_hours
from tests.helpers import ROOT

pytestmark = pytest.mark.unit

SEED = ROOT / "catalog" / "labkit-2026-09-24.csv"
HEADER = "provider,catalog_version,gpu,device_names,gpus_per_lot,days,price_per_lot,currency,source,billing,min_hours,increment_hours\n"


def catalog(tmp_path, *rows: str):
    path = tmp_path / "prices.csv"
    path.write_text(HEADER + "".join(row + "\n" for row in rows))
    return path


def row(gpu="g1", days="7", price="90", per_lot="1", billing="package", min_hours="", increment="", currency="USD"):
    return f"p,2026-11,{gpu},Some GPU,{per_lot},{days},{price},{currency},test,{billing},{min_hours},{increment}"


def plans(path, gpu, hours, gpus=1):
    return covering_plans(load_catalog(path).for_gpu(gpu), parse_hours(str(hours)), gpus)


def test_a_50_hour_window_takes_the_cheaper_7_day_package_not_the_shorter_3_day(tmp_path):
    path = catalog(tmp_path, row(days="3", price="100"), row(days="7", price="90"))
    best, other = plans(path, "g1", 50)
    assert (best.offer.days, best.periods, best.lots, best.total) == (7, 1, 1, Decimal("90.00"))
    assert (other.offer.days, other.total) == (3, Decimal("100.00"))


def test_a_200_hour_window_with_only_7_day_packages_is_two_consecutive_periods(tmp_path):
    (best,) = plans(catalog(tmp_path, row(days="7", price="90")), "g1", 200)
    assert best.periods == 2 and best.total == Decimal("180.00")
    assert best.describe() == "2 x 7-day g1 package, 1 lot: 180.00 USD"


def test_a_configuration_using_2_gpus_with_1_gpu_lots_takes_2_lots(tmp_path):
    (best,) = plans(catalog(tmp_path, row(days="7", price="110")), "g1", 96, gpus=2)
    assert best.lots == 2 and best.total == Decimal("220.00") and best.note == ""


def test_hourly_minimum_4_hours_bills_a_2_2_hour_window_as_4_hours(tmp_path):
    path = catalog(tmp_path, row(days="", price="1.50", billing="hourly", min_hours="4", increment="1"))
    (best,) = plans(path, "g1", "2.2")
    assert best.hours_billed == Decimal(4) and best.total == Decimal("6.00") and best.periods == 1


def test_hourly_window_is_rounded_up_to_the_increment_above_the_minimum(tmp_path):
    path = catalog(tmp_path, row(days="", price="1.50", billing="hourly", min_hours="1", increment="0.25"))
    (best,) = plans(path, "g1", "2.2")
    assert best.hours_billed == Decimal("2.25") and best.total == Decimal("3.38")


def test_the_seed_catalog_figures_are_unchanged():
    seed = load_catalog(SEED)
    (rtx,) = covering_plans(seed.for_gpu("rtx-4090"), Decimal(96), gpus=2)
    assert (rtx.lots, rtx.periods, rtx.total) == (2, 1, Decimal("220.00"))
    (b200,) = covering_plans(seed.for_gpu("b200"), Decimal(96), gpus=2)
    assert (b200.lots, b200.total, b200.unused_gpus) == (1, Decimal("2071.00"), 0)


def test_a_lot_larger_than_the_configuration_says_so_and_counts_no_second_gpu():
    (b200,) = covering_plans(load_catalog(SEED).for_gpu("b200"), Decimal(96), gpus=1)
    assert b200.total == Decimal("2071.00") and b200.note.startswith("uses 1 of the lot's 2 GPUs")


def test_on_a_tie_the_shorter_commitment_comes_first(tmp_path):
    path = catalog(tmp_path, row(days="30", price="90"), row(days="7", price="90"))
    assert [p.offer.days for p in plans(path, "g1", 50)] == [7, 30]


def test_hourly_and_packages_are_compared_on_the_same_window(tmp_path):
    path = catalog(tmp_path, row(days="7", price="100"),
                   row(days="", price="1.00", billing="hourly", min_hours="1", increment="1"))
    assert [p.offer.billing for p in plans(path, "g1", 50)] == ["hourly", "package"]
    assert [p.offer.billing for p in plans(path, "g1", 150)] == ["package", "hourly"]


def test_float_noise_in_a_forecast_never_bills_another_increment():
    assert to_hours(2.0000000000001) == Decimal("2.000000")


def test_plan_command_lists_every_covering_plan_cheapest_first_as_json(tmp_path):
    path = catalog(tmp_path, row(days="3", price="100"), row(days="7", price="90"),
                   row(days="", price="1.50", billing="hourly", min_hours="4", increment="1"))
    result = CliRunner().invoke(main, ["plan", "--gpu", "g1", "--hours", "50", "--catalog", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.output)
    assert [(p["billing"], p["package_days"], p["total"]) for p in listed] == [
        ("hourly", None, "75.00"), ("package", 7, "90.00"), ("package", 3, "100.00")]
    assert {"gpu", "billing", "package_days", "periods", "lots", "hours_billed", "total", "currency"} <= set(listed[0])
    assert listed[0]["hours_billed"] == "50" and listed[1]["hours_billed"] is None and listed[0]["currency"] == "USD"


def test_plan_command_table_names_consecutive_periods_and_lots():
    result = CliRunner().invoke(main, ["plan", "--gpu", "rtx-4090", "--hours", "200", "--gpus", "2", "--catalog", str(SEED)])
    assert result.exit_code == 0
    assert "1. 2 x 7-day rtx-4090 package, 2 lots: 440.00 USD" in result.output
    assert "never extended automatically" in result.output


@pytest.mark.parametrize("args, message", [
    (["--hours", "-3"], "--hours must be a number of hours > 0, got '-3'"),
    (["--hours", "abc"], "--hours must be a number of hours > 0, got 'abc'"),
    (["--hours", "nan"], "--hours must be a number of hours > 0, got 'nan'"),
    (["--hours", "5", "--gpus", "0"], "--gpus must be a whole number >= 1, got '0'"),
    (["--hours", "5", "--gpu", "h100"], "GPU 'h100' is not in catalog"),
])
def test_bad_plan_input_is_one_line_exit_2(args, message):
    options = {"--gpu": "b200", "--catalog": str(SEED)}
    result = CliRunner().invoke(main, ["plan", *[x for kv in options.items() for x in kv], *args])
    assert result.exit_code == 2 and message in result.output
    assert len(result.output.strip().splitlines()) == 1


HOURLY_ERRORS = {
    "hourly without increment": (row(days="", price="1.5", billing="hourly", min_hours="4"),
                                 ":2: empty increment_hours (an hourly row needs min_hours and increment_hours)"),
    "hourly with days": (row(days="7", price="1.5", billing="hourly", min_hours="4", increment="1"),
                         ":2: days must be empty on an hourly row"),
    "increment not positive": (row(days="", price="1.5", billing="hourly", min_hours="4", increment="0"),
                               ":2: increment_hours '0' must be > 0"),
    "min not a number": (row(days="", price="1.5", billing="hourly", min_hours="four", increment="1"),
                         ":2: min_hours 'four' is not a number"),
    "unknown billing": (row(billing="monthly"), ":2: billing 'monthly' is not one of package, hourly"),
    "package without days": (row(days=""), ":2: empty days"),
    "package with increment": (row(increment="1"), ":2: increment_hours is for hourly rows"),
    "mixed currencies": (row(days="3") + "\n" + row(currency="EUR"), ":3: currency EUR mixed with USD"),
}


@pytest.mark.parametrize("case", sorted(HOURLY_ERRORS))
def test_every_hourly_catalog_problem_is_one_line_naming_file_and_line(tmp_path, case):
    content, message = HOURLY_ERRORS[case]
    path = catalog(tmp_path, content)
    result = CliRunner().invoke(main, ["plan", "--gpu", "g1", "--hours", "5", "--catalog", str(path)])
    assert result.exit_code == 2 and f"{path}{message}" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_catalog_without_billing_columns_still_reads_as_packages():
    seed = load_catalog(SEED)
    assert {p.billing for p in seed.packages} == {"package"} and seed.find("b200", 7).days == 7


def _forecast(fixed_h: float, per_h: float) -> Forecast:
    return Forecast(setup_h=fixed_h, waiting_h=0.0, comparisons_h=0.0, comparisons=0, comparisons_estimated=0,
                    restarts=0, startup_h=0.0, deliverables=1, per_deliverable_h=(per_h, per_h, per_h))


def test_break_even_finds_where_an_hourly_rate_and_a_package_change_order(tmp_path):
    path = catalog(tmp_path, row(gpu="hourly", days="", price="1.00", billing="hourly", min_hours="1", increment="1"),
                   row(gpu="weekly", days="7", price="100"))
    rows = load_catalog(path)
    hourly = Priced("A", _forecast(1.0, 1.0), tuple(rows.for_gpu("hourly")))
    weekly = Priced("B", _forecast(1.0, 1.0), tuple(rows.for_gpu("weekly")))
    # A costs (1 + N) x 1.00; B costs 100 per started 168 h: B is cheaper from 100 to 167, A again from 168.
    low = break_even(hourly, weekly, 1)
    assert low.cheaper_at_volume == "A" and low.flip_above == (100, "B") and low.flip_below is None
    middle = break_even(hourly, weekly, 150)
    assert middle.cheaper_at_volume == "B" and middle.flip_above == (168, "A") and middle.flip_below == (98, "A")
    assert "from 168 deliverables A is cheaper" in middle.describe() and "forecast" in middle.describe()


def test_break_even_says_when_the_order_never_flips():
    seed = load_catalog(SEED)
    rtx = Priced("rtx", _forecast(4.0, 0.01), tuple(seed.for_gpu("rtx-4090")))
    b200 = Priced("b200", _forecast(4.0, 0.003), tuple(seed.for_gpu("b200")))
    result = break_even(rtx, b200, 1)
    assert result.flip_above is None and result.flip_below is None
    assert "does not flip between 1 and" in result.describe()


def test_parse_hours_refuses_zero():
    with pytest.raises(GpucostError, match="> 0"):
        parse_hours("0")


def test_overlapping_measured_spans_on_one_host_name_each_other_other_hosts_never():
    from gpucost_mlflow.core.measurement.overlap import Interval, overlaps

    spans = [Interval("a", "h1", 0, 10), Interval("b", "h1", 5, 15), Interval("c", "h1", 10, 20),
             Interval("d", "h2", 0, 30), Interval("e", "", 0, 30)]
    assert overlaps(spans) == {"a": ["b"], "b": ["a", "c"], "c": ["b"]}
