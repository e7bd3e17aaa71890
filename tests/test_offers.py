"""Interruptible offers priced with their rework, dated prices aged and stale ones set aside (docs/costs.md)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money.catalog import dated, example_catalog, load_catalog
from gpucost_mlflow.core.money.interruptions import poisson_cdf, rework
from gpucost_mlflow.core.money.plans import covering_plans, to_hours
from tests.scenario import RTX, report
from tests.test_report import protocol_like_shipped

pytestmark = pytest.mark.unit

HEAD = ("provider,catalog_version,gpu,device_names,gpus_per_lot,days,price_per_lot,currency,source,billing,min_hours,"
        "increment_hours,as_of,interruptions_per_day,restart_hours,interruptions_source\n")
SPOT = 'cloud,2026-11,a10,NVIDIA A10,1,,0.40,USD,"spot quote",interruptible,1,1,2026-11-30,2,0.5,"your last month"\n'
ON_DEMAND = 'cloud,2026-11,a10,NVIDIA A10,1,,1.00,USD,"on-demand quote",hourly,1,1,2026-11-30,,,\n'


def catalog_file(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "catalog.csv"
    path.write_text(HEAD + "".join(rows), encoding="utf-8")
    return path


def test_two_interruptions_a_day_over_10_hours_expect_10_9_hours_and_12_at_p90():
    found = rework(10.0, 1.0, 2.0, 0.5, "your last month")
    assert found.expected_h == pytest.approx(10 / (1 - 2 / 24))  # 10.909 h: each interruption loses 0.5 + 0.5 h
    assert found.p90_count == 2 and found.p90_h == pytest.approx(12.0)
    assert poisson_cdf(1, 2 * 11 / 24) < 0.9 <= poisson_cdf(2, 2 * 12 / 24)
    assert "2 interruptions a day expected (your last month)" in found.assumption


def test_an_interruptible_row_at_0_40_beats_1_00_hourly_on_its_p90_total(tmp_path):
    catalog = load_catalog(catalog_file(tmp_path, SPOT, ON_DEMAND))
    plans = covering_plans(catalog.for_gpu("a10"), to_hours(10.0), 1, 1.0)
    spot, hourly = plans
    assert spot.offer.billing == "interruptible" and (spot.expected_total, spot.total) == (Decimal("4.40"), Decimal("4.80"))
    assert spot.expected_billed == Decimal(11) and spot.hours_billed == Decimal(12)
    assert hourly.total == Decimal("10.00") and hourly.expected_total is None
    assert "12 h billed at P90 (expected 11 h: 4.40 USD; 2 interruptions a day expected" in spot.describe()
    assert spot.as_dict()["p90_total"] == "4.80" and spot.as_dict()["expected_total"] == "4.40"
    assert hourly.as_dict()["p90_total"] == hourly.as_dict()["expected_total"] == "10.00"


def test_plan_json_gives_expected_and_p90_totals(tmp_path):
    path = catalog_file(tmp_path, SPOT, ON_DEMAND)
    result = CliRunner().invoke(main, ["plan", "--gpu", "a10", "--hours", "10", "--deliverable-hours", "1",
                                       "--catalog", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    plans = json.loads(result.output)
    assert [(p["billing"], p["expected_total"], p["p90_total"]) for p in plans] == [
        ("interruptible", "4.40", "4.80"), ("hourly", "10.00", "10.00")]


@pytest.mark.parametrize(("row", "says"), [
    (SPOT.replace(",2,0.5,", ",-1,0.5,"), "interruptions_per_day '-1' is negative"),
    (SPOT.replace(',2,0.5,"your last month"', ",2,0.5,"), "an interruptible row needs interruptions_per_day"),
    (ON_DEMAND.replace(",,,\n", ",2,,\n"), "interruptions_per_day is for interruptible rows"),
    (ON_DEMAND.replace("2026-11-30", "30/11/2026"), "as_of '30/11/2026' is not a date"),
])
def test_a_bad_offer_row_is_one_line_exit_2(tmp_path, row, says):
    with pytest.raises(GpucostError, match="catalog.csv:2:") as refused:
        load_catalog(catalog_file(tmp_path, row))
    assert says in str(refused.value) and "\n" not in str(refused.value)
    result = CliRunner().invoke(main, ["plan", "--gpu", "a10", "--hours", "10", "--catalog",
                                       str(tmp_path / "catalog.csv")])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1


def test_a_400_day_old_price_under_max_age_90_is_not_priced_unless_allowed(tmp_path):
    old = ON_DEMAND.replace("2026-11-30", "2025-10-27")
    catalog = load_catalog(catalog_file(tmp_path, old))
    today = dt.date(2026, 12, 1)
    fresh, remarks = dated(catalog, today, 90)
    assert fresh.packages == () and len(fresh.stale) == 1
    assert "stale price (400 days > max_price_age_days 90), not priced" in remarks[0]
    allowed, remarks = dated(catalog, today, 90, allow_stale=True)
    assert len(allowed.packages) == 1 and "priced anyway (--allow-stale-prices)" in remarks[0]
    assert "as of 2025-10-27 (400 days)" in dated(catalog, today, None)[1][0]


def test_a_catalog_without_as_of_is_dated_by_its_version_and_undated_only_where_nothing_says_when(tmp_path):
    catalog = load_catalog(Path(__file__).resolve().parents[1] / "catalog" / "labkit-2026-09-24.csv")
    _, remarks = dated(catalog, dt.date(2026, 12, 1), 90)
    assert all(line.endswith("as of 2026-09-24 (68 days, the catalog version's date)") for line in remarks)
    assert len(remarks) == 2
    written = tmp_path / "this-machine.csv"
    written.write_text(example_catalog("AMD EPYC", Decimal("0.10"), "usd", Decimal(1), Decimal(1), "2026-12-03"))
    assert dated(load_catalog(written), dt.date(2026, 12, 3), None)[1][0].endswith("as of 2026-12-03 (0 days)")
    undated = tmp_path / "undated.csv"
    undated.write_text("provider,catalog_version,gpu,device_names,gpus_per_lot,days,price_per_lot,currency,source\n"
                       'labkit,spring,rtx-4090,NVIDIA GeForce RTX 4090,1,7,110.00,USD,"a quote"\n', encoding="utf-8")
    assert dated(load_catalog(undated), dt.date(2026, 12, 3), None)[1][0].endswith("undated price")


def test_the_report_does_not_price_a_stale_row_and_says_why(experiment, tmp_path):
    for seconds in (100.0, 101.0, 99.0, 100.5, 100.2):
        experiment("batch8", RTX, seconds)
    path = tmp_path / "dated.csv"
    path.write_text("provider,catalog_version,gpu,device_names,gpus_per_lot,days,price_per_lot,currency,source,as_of\n"
                    'labkit,2025-10,rtx-4090,NVIDIA GeForce RTX 4090,1,7,110.00,USD,"old quote",2025-10-27\n',
                    encoding="utf-8")
    protocol = protocol_like_shipped(tmp_path, drop_deadline=True, append="max_price_age_days: 90\n")
    built, _ = report(catalog=path, protocol_path=protocol)
    batch8 = built.assessments[0]
    assert batch8.plan is None and batch8.priced.startswith("not priced: stale price (")
    assert "--allow-stale-prices" in batch8.priced
    (prices,) = [lines for title, _, lines in built.lists if title == "Prices and their age"]
    assert "stale price" in prices[0]


API_HEAD = "kind,provider,model,price_per_million_input,price_per_million_output,currency,as_of,source\n"
API_ROW = 'api,hosted,smollm2-135m,0.20,0.60,USD,2026-11-30,"price page"\n'


def endpoints_file(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "endpoints.csv"
    path.write_text(API_HEAD + "".join(rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(("row", "says"), [
    (API_ROW.replace("0.20,0.60", "0.20,"), "empty price_per_million_output"),
    (API_ROW.replace("0.20,0.60", "-0.20,0.60"), "price_per_million_input '-0.20' is not a price >= 0"),
    (API_ROW.replace("api,", "gpu,"), "kind 'gpu'"),
])
def test_a_bad_api_row_is_refused_in_one_line(tmp_path, row, says):
    from gpucost_mlflow.core.money.endpoints import load_endpoints

    with pytest.raises(GpucostError, match="endpoints.csv:2:") as refused:
        load_endpoints(endpoints_file(tmp_path, row))
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_an_endpoint_no_judged_pass_backs_is_listed_not_judged_never_priced_as_a_candidate(experiment, tmp_path):
    from gpucost_mlflow.report import alternatives

    for seconds in (100.0, 101.0, 99.0, 100.5, 100.2):
        experiment("batch8", RTX, seconds, metrics_extra={"tokens_prompt": 50_000.0})
    endpoints_file(tmp_path, API_ROW)
    protocol = protocol_like_shipped(tmp_path, drop_deadline=True, expected=4, append=(
        "alternatives:\n  catalog: endpoints.csv\n  endpoints: [hosted/smollm2-135m]\n  output_tokens_per_input: 1\n"))
    built, _ = report(protocol_path=protocol)
    (lines,) = [lines for title, _, lines in built.lists if title == alternatives.TITLE]
    (line,) = lines
    assert line.startswith("hosted/smollm2-135m (price page; as of 2026-11-30, ")
    assert line.endswith("): not judged: no judged pass ran through it, never a candidate; list price 0.20/0.60 USD "
                         "per million input/output tokens")
    assert "renting" not in line and " cost " not in line
    assert "assumed equal" not in alternatives.TEXT and "not judged" in alternatives.TEXT
    assert [a.configuration.variant for a in built.choice.chosen] == ["batch8"]  # the rental, judged


def test_an_endpoint_catalog_that_is_not_utf8_is_one_line_never_a_traceback(tmp_path):
    from gpucost_mlflow.core.money.endpoints import load_endpoints

    path = tmp_path / "endpoints.csv"
    path.write_bytes(API_HEAD.encode() + b"api,h\xe9bergeur,m,0.2,0.6,EUR,2026-11-30,page\n")
    with pytest.raises(GpucostError, match="endpoints.csv: not valid UTF-8"):
        load_endpoints(path)


def test_the_example_row_names_a_machine_one_can_order_and_is_dated(tmp_path):
    """`gpucost catalog example` writes the machine's cores and memory as the row's instance (the card's Rent line
    names it) and the day it wrote the price as its as_of."""
    import os

    out = tmp_path / "this-machine.csv"
    result = CliRunner().invoke(main, ["catalog", "example", "--out", str(out), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    (row,) = load_catalog(out).packages
    cores = len(os.sched_getaffinity(0))
    assert row.instance.startswith(f"{cores} vCPU ") and row.instance.endswith(" GiB")
    assert row.as_of == dt.date.today() and not row.as_of_from_version
    assert row.describe().endswith(f"on this-machine {row.instance}")
