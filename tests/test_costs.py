"""Catalog, package calculator and campaign window (PROTOCOL §9-11): whole packages, Decimal money, DST counted."""

from __future__ import annotations

from decimal import Decimal

import pytest
from click.testing import CliRunner

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money import costs
from gpucost_mlflow.core.money.catalog import load_catalog
from gpucost_mlflow.core.money.window import consecutive_needed, covers, window
from tests.helpers import ROOT

pytestmark = pytest.mark.unit

CATALOG = ROOT / "catalog" / "labkit-2026-09-24.csv"
HEADER = "provider,catalog_version,gpu,device_names,gpus_per_lot,days,price_per_lot,currency,source\n"
GOOD = "labkit,2026-09-24,rtx-4090,NVIDIA GeForce RTX 4090,1,7,110.00,USD,brief\n"


def cli(*args: str):
    return CliRunner().invoke(main, [*args, "--catalog", str(CATALOG)] if args[0] == "packages" else list(args))


def test_two_rtx4090_lots_for_7_days_cost_220_usd_for_2_gpus():
    result = cli("packages", "--gpu", "rtx-4090", "--days", "7", "--lots", "2")
    assert result.exit_code == 0 and "220.00 USD for 2 GPU(s)" in result.output
    assert "cost per validated corpus" not in result.output


def test_four_accepted_results_make_55_usd_per_validated_corpus():
    result = cli("packages", "--gpu", "rtx-4090", "--days", "7", "--lots", "2", "--accepted-results", "4")
    assert "cost per validated corpus: 55.00 USD" in result.output


def test_a_b200_lot_already_holds_two_cards():
    result = cli("packages", "--gpu", "b200", "--days", "7", "--lots", "1")
    assert result.exit_code == 0 and "2,071.00 USD for 2 GPU(s)" in result.output


def test_no_accepted_result_leaves_the_ratio_undefined_and_the_total_committed():
    result = cli("packages", "--gpu", "b200", "--days", "7", "--lots", "1", "--accepted-results", "0")
    assert "2,071.00 USD for 2 GPU(s)" in result.output
    assert "cost per validated corpus: undefined (no cost per result yet: no deliverable accepted)" in result.output


@pytest.mark.parametrize("value", ["-1", "2.5", "four"])
def test_accepted_results_must_be_a_whole_number(value):
    result = cli("packages", "--gpu", "b200", "--days", "7", "--accepted-results", value)
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1


def test_without_days_the_3_7_30_day_packages_are_listed_unknown_ones_not_guessed():
    lines = cli("packages", "--gpu", "rtx-4090", "--lots", "2").output.splitlines()
    assert lines == [
        "rtx-4090, 3-day package: not in catalog 2026-09-24",
        "rtx-4090, 7-day package, 2 lot(s): 220.00 USD for 2 GPU(s) (110.00 USD per lot of 1; catalog 2026-09-24)",
        "rtx-4090, 30-day package: not in catalog 2026-09-24",
    ]


def test_unknown_gpu_is_refused_with_the_known_ids():
    result = cli("packages", "--gpu", "h100", "--days", "7")
    assert result.exit_code == 2 and "known: b200, rtx-4090" in result.output


def test_money_is_decimal_and_exact():
    package = load_catalog(CATALOG).find("b200", 7)
    held = costs.commit(package, 3)
    assert held.total == Decimal("6213.00") and held.gpus == 6
    assert costs.cost_per_validated_corpus(held.total, 7) == Decimal("887.57")
    assert costs.cost_per_validated_corpus(held.total, 0) is None


def test_catalog_matches_a_measured_device_by_its_driver_name():
    catalog = load_catalog(CATALOG)
    assert [p.gpu for p in catalog.for_device("NVIDIA B200")] == ["b200"]
    assert catalog.for_device("AMD EPYC 7B13") == []


CATALOG_ERRORS = {
    "missing column": ("provider,gpu\nlabkit,b200\n", ":1: missing column(s) catalog_version"),
    "negative price": (HEADER + GOOD.replace("110.00", "-5"), ":2: price_per_lot '-5' is negative"),
    "non-numeric price": (HEADER + GOOD.replace("110.00", "cheap"), ":2: price_per_lot 'cheap' is not a number"),
    "days not positive": (HEADER + GOOD.replace(",7,", ",0,"), ":2: days '0' is not a positive whole number"),
    "days not whole": (HEADER + GOOD.replace(",7,", ",7.5,"), ":2: days '7.5' is not a positive whole number"),
    "duplicate package": (HEADER + GOOD + GOOD, ":3: duplicate package rtx-4090 7 days"),
    "mixed currencies": (HEADER + GOOD + GOOD.replace(",7,", ",3,").replace("USD", "EUR"), ":3: currency EUR mixed with USD"),
    "empty field": (HEADER + GOOD.replace("brief", ""), ":2: empty source"),
}


@pytest.mark.parametrize("case", sorted(CATALOG_ERRORS))
def test_every_catalog_problem_is_one_line_naming_file_and_line(tmp_path, case):
    content, message = CATALOG_ERRORS[case]
    path = tmp_path / "prices.csv"
    path.write_text(content)
    result = CliRunner().invoke(main, ["packages", "--gpu", "rtx-4090", "--days", "7", "--catalog", str(path)])
    assert result.exit_code == 2
    assert f"{path}{message}" in result.output and len(result.output.strip().splitlines()) == 1


def test_monday_to_friday_is_96_hours_covered_by_7_days_not_3():
    result = cli("window", "--start", "2026-11-30T09:00", "--end", "2026-12-04T09:00", "--tz", "Europe/Amsterdam")
    assert result.exit_code == 0
    assert "96 h elapsed" in result.output
    assert "3-day package (72 h): does not cover it" in result.output
    assert "7-day package (168 h): covers the window" in result.output


def test_spring_forward_window_is_one_hour_shorter():
    span = window("2026-03-28T09:00", "2026-03-31T09:00", "Europe/Amsterdam")
    assert span.hours == 71 and covers(3, span.hours)


def test_fall_back_window_is_one_hour_longer_and_overflows_3_days():
    span = window("2026-10-24T09:00", "2026-10-27T09:00", "Europe/Amsterdam")
    assert span.hours == 73 and not covers(3, span.hours) and consecutive_needed(3, span.hours) == 2


def test_times_in_the_gap_or_the_repeated_hour_are_refused():
    with pytest.raises(GpucostError, match="does not exist"):
        window("2026-03-29T02:30", "2026-03-31T09:00", "Europe/Amsterdam")
    with pytest.raises(GpucostError, match="ambiguous"):
        window("2026-10-25T02:30", "2026-10-31T09:00", "Europe/Amsterdam")


def test_window_no_package_covers_says_budget_explicitly():
    result = cli("window", "--start", "2026-01-01T00:00", "--end", "2026-03-01T00:00", "--tz", "UTC")
    assert "2 consecutive packages needed" in result.output
    assert "budget the consecutive packages explicitly" in result.output and "never extended automatically" in result.output


def test_window_prices_its_covering_plans_with_the_planner():
    result = CliRunner().invoke(main, ["window", "--start", "2026-11-30T09:00", "--end", "2026-12-04T09:00",
                                       "--tz", "Europe/Amsterdam", "--gpu", "rtx-4090", "--gpus", "2", "--catalog", str(CATALOG)])
    assert result.exit_code == 0, result.output
    assert "3-day package (72 h): does not cover it; 2 consecutive packages needed" in result.output
    assert "covering plans for rtx-4090, 2 GPU(s), 96 h (catalog 2026-09-24), cheapest first:" in result.output
    assert "1. 1 x 7-day rtx-4090 package, 2 lots: 220.00 USD" in result.output


@pytest.mark.parametrize("args, message", [
    (["--tz", "Mars/Olympus"], "unknown time zone"),
    (["--tz", "UTC", "--start", "monday"], "not an ISO date-time"),
])
def test_bad_window_input_is_one_line_error(args, message):
    base = {"--start": "2026-11-30T09:00", "--end": "2026-12-04T09:00", "--tz": "UTC"}
    for flag, value in zip(args[::2], args[1::2]):
        base[flag] = value
    result = CliRunner().invoke(main, ["window", *[x for kv in base.items() for x in kv]])
    assert result.exit_code == 2 and message in result.output
