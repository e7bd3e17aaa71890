"""Spot risk from data (docs/catalogs.md, docs/costs.md): AWS Spot Advisor's published interruption bands, dated by
the user, set the interruption assumption of interruptible rows and of imported spot offers at each band's upper
edge; a file that is malformed, truncated or undated is refused in one line and nothing is written."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
import os
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

from gpucost_mlflow.cli import main
from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.money import market, spot_advisor
from gpucost_mlflow.core.money.catalog import load_catalog
from gpucost_mlflow.core.money.plans import covering_plans, to_hours
from gpucost_mlflow.market import gpuhunt
from tests.helpers import cli_runner
from tests.test_market import GPUHUNT_HEADER, market_gpucost

# The published file's shape (https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json), cut to a few entries;
# its ranges as AWS publishes them, `max` included (5, 11, 16, 22, 100).
ADVISOR = {
    "global_rate": "<10%",
    "instance_types": {"g5.xlarge": {"emr": True, "cores": 4, "ram_gb": 16.0},
                       "g5.2xlarge": {"emr": True, "cores": 8, "ram_gb": 32.0},
                       "p4d.24xlarge": {"emr": False, "cores": 96, "ram_gb": 1152.0}},
    "ranges": [{"index": 0, "label": "<5%", "dots": 0, "max": 5}, {"index": 1, "label": "5-10%", "dots": 1, "max": 11},
               {"index": 2, "label": "10-15%", "dots": 2, "max": 16}, {"index": 3, "label": "15-20%", "dots": 3, "max": 22},
               {"index": 4, "label": ">20%", "dots": 4, "max": 100}],
    "spot_advisor": {
        "us-east-1": {"Linux": {"g5.xlarge": {"s": 60, "r": 1}, "g5.2xlarge": {"s": 62, "r": 4},
                                "p4d.24xlarge": {"s": 70, "r": 0}},
                      "Windows": {"g5.xlarge": {"s": 40, "r": 3}}},
        "eu-west-1": {"Linux": {"g5.xlarge": {"s": 55, "r": 2}}},
    },
}
DAY = "2026-12-01"
NAMES = market.load_device_names([shipped.shipped(shipped.DEVICE_NAMES)])
TERMS = market.load_terms(shipped.shipped(shipped.BILLING_TERMS))
OFFERS = [market.Offer("aws", "g5.xlarge", "us-east-1", "A10G", 1, 24.0, Decimal("1.006"), Decimal("0.4012")),
          market.Offer("aws", "g5.2xlarge", "us-east-1", "A10G", 1, 24.0, Decimal("1.212"), Decimal("0.4900")),
          market.Offer("aws", "g5.xlarge", "ap-south-1", "A10G", 1, 24.0, Decimal("1.100"), Decimal("0.4400")),
          market.Offer("gcp", "g2-standard-4", "us-central1-a", "L4", 1, 24.0, Decimal("0.7069"), Decimal("0.2800"))]
USERS = market.Interruptions(Decimal(2), Decimal("0.5"), "our last month")


def advisor_file(folder: Path, data: dict | None = None, text: str | None = None) -> Path:
    path = folder / "spot-advisor-data.json"
    path.write_text(text if text is not None else json.dumps(data or ADVISOR), encoding="utf-8")
    return path


def spot_catalog(folder: Path) -> Path:
    """Interruptible rows under the user's own assumption (2 a day), as `gpucost catalog import` writes them."""
    imported = market.catalog_text(OFFERS, version="skypilot-v8-2026-11-28", source="SkyPilot 0.14.1 catalog v8",
                                   as_of={"aws": dt.date(2026, 11, 28), "gcp": dt.date(2026, 11, 28)}, names=NAMES,
                                   terms=TERMS, interruptions=USERS)
    path = folder / "catalog.csv"
    path.write_text(imported.text, encoding="utf-8")
    return path


def rows_of(path: Path) -> dict[tuple[str, str, str], dict]:
    return {(r["instance"], r["region"], r["billing"]): r for r in csv.DictReader(io.StringIO(path.read_text()))}


def import_advisor(*args: str):
    return cli_runner().invoke(main, ["catalog", "import", "spot-advisor", *args])


@pytest.mark.unit
def test_a_monthly_band_edge_becomes_the_poisson_rate_a_day_that_interrupts_that_share_within_30_days():
    assert spot_advisor.per_day_from_monthly(Decimal(10)) == Decimal("0.003513")
    assert spot_advisor.per_day_from_monthly(Decimal(5)) == Decimal("0.001710")
    for percent in (5, 10, 15, 20, 50):
        rate = float(spot_advisor.per_day_from_monthly(Decimal(percent)))
        assert 1 - math.exp(-30 * rate) == pytest.approx(percent / 100, abs=1e-4)  # rounded up, never below the band
        assert 1 - math.exp(-30 * rate) >= percent / 100
    assert spot_advisor.per_day_from_monthly(Decimal(100)) is None  # everything interrupted: no rate bounds it


@pytest.mark.unit
def test_each_band_is_read_at_its_labels_upper_edge_and_the_open_band_at_the_files_max(tmp_path):
    advisor = spot_advisor.read(advisor_file(tmp_path), dt.date(2026, 12, 1))
    assert advisor.bands[("us-east-1", "g5.xlarge")] == spot_advisor.Band("5-10%", Decimal(10))
    assert advisor.bands[("us-east-1", "p4d.24xlarge")] == spot_advisor.Band("<5%", Decimal(5))
    assert advisor.bands[("us-east-1", "g5.2xlarge")] == spot_advisor.Band(">20%", Decimal(100))
    assert ("eu-west-1", "g5.xlarge") in advisor.bands and len(advisor.bands) == 4  # Linux only
    found = advisor.advice("g5.xlarge", "us-east-1")
    assert found.per_day == Decimal("0.003513")
    assert found.source.startswith("AWS Spot Advisor 2026-12-01 (Linux), us-east-1 g5.xlarge band 5-10%")
    assert advisor.advice("g5.xlarge", "ap-south-1") is None
    assert "no finite rate" in advisor.advice("g5.2xlarge", "us-east-1").why_not


@pytest.mark.unit
def test_an_open_band_without_a_max_is_not_guessed(tmp_path):
    data = json.loads(json.dumps(ADVISOR))
    del data["ranges"][4]["max"]
    found = spot_advisor.read(advisor_file(tmp_path, data), dt.date(2026, 12, 1)).advice("g5.2xlarge", "us-east-1")
    assert found.band.upper_percent is None and found.per_day is None
    assert "has no upper edge in the file (no `max`)" in found.why_not


@pytest.mark.unit
def test_a_catalogs_interruptible_aws_rows_take_their_band_with_its_source_and_date_and_nothing_else_changes(tmp_path):
    catalog = spot_catalog(tmp_path)
    before = rows_of(catalog)
    done = import_advisor("--file", str(advisor_file(tmp_path)), "--as-of", DAY, "--catalog", str(catalog))
    assert done.exit_code == 0, done.output
    after = rows_of(catalog)
    banded = after[("g5.xlarge", "us-east-1", "interruptible")]
    assert banded["interruptions_per_day"] == "0.003513" and banded["restart_hours"] == "0.5"
    assert banded["interruptions_source"].startswith("AWS Spot Advisor 2026-12-01 (Linux), us-east-1 g5.xlarge band "
                                                     "5-10%: P90 at its upper edge, 10 % a month = 0.003513 a day")
    for key in after:  # the open band, the region the file lacks, GCP and every hourly row: as they were
        if key != ("g5.xlarge", "us-east-1", "interruptible"):
            assert after[key] == before[key], key
    assert list(after) == list(before)
    assert "g5.2xlarge in us-east-1 left as it was: band >20% reaches 100 % a month in the file" in done.stdout
    assert "1 interruptible AWS row(s) left as they were: their instance and region are not in the file" in done.stdout
    assert "1 interruptible row(s) of other providers left as they were" in done.stdout
    assert f"{catalog}: 1 interruptible row(s) set from AWS Spot Advisor 2026-12-01" in done.stdout

    offers = load_catalog(catalog).for_device("NVIDIA A10G")
    spot = next(o for o in offers if o.billing == "interruptible" and o.instance == "g5.xlarge" and o.region == "us-east-1")
    [plan] = [p for p in covering_plans([spot], to_hours(10.0), 1, 1.0)]
    assert "interruptions a day expected (AWS Spot Advisor 2026-12-01" in plan.rework.assumption
    assert plan.rework.p90_count == 0  # 10 % a month: no interruption expected at P90 within a 10-hour window


@pytest.mark.unit
def test_an_undated_spot_advisor_file_is_refused_and_nothing_is_written(tmp_path):
    catalog = spot_catalog(tmp_path)
    before = catalog.read_bytes()
    done = import_advisor("--file", str(advisor_file(tmp_path)), "--catalog", str(catalog))
    assert done.exit_code == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "carries no date: give --as-of YYYY-MM-DD" in done.stderr
    assert catalog.read_bytes() == before
    future = (dt.date.today() + dt.timedelta(days=2)).isoformat()
    done = import_advisor("--file", str(advisor_file(tmp_path)), "--as-of", future, "--catalog", str(catalog))
    assert done.exit_code == 2 and "is in the future" in done.stderr and catalog.read_bytes() == before


def _without(key: str) -> str:
    return json.dumps({k: v for k, v in ADVISOR.items() if k != key})


def _with_range(index: object) -> str:
    data = json.loads(json.dumps(ADVISOR))
    data["spot_advisor"]["us-east-1"]["Linux"]["g5.xlarge"]["r"] = index
    return json.dumps(data)


def _with_label(label: str) -> str:
    data = json.loads(json.dumps(ADVISOR))
    data["ranges"][1]["label"] = label
    return json.dumps(data)


@pytest.mark.unit
@pytest.mark.parametrize(("text", "message"), [
    (json.dumps(ADVISOR)[:700], "not complete JSON"),
    ("", "not complete JSON"),
    ("[]", "not a JSON object"),
    (_without("spot_advisor"), "no 'spot_advisor'"),
    (_without("ranges"), "no 'ranges'"),
    (_with_range(9), "its range 'r' (9) is not one of the file's ranges"),
    (_with_range("1"), "its range 'r' ('1') is not one of the file's ranges"),
    (_with_label("sometimes"), "range label 'sometimes' is not"),
    (json.dumps({**ADVISOR, "spot_advisor": {"us-east-1": {"Windows": {}}}}), "no Linux instance type in any region"),
], ids=["truncated", "empty", "a-list", "no-spot-advisor", "no-ranges", "unknown-range", "range-as-text", "bad-label",
        "no-linux"])
def test_a_malformed_or_truncated_spot_advisor_file_is_one_line_exit_2_and_nothing_is_written(tmp_path, text, message):
    catalog = spot_catalog(tmp_path)
    before = catalog.read_bytes()
    done = import_advisor("--file", str(advisor_file(tmp_path, text=text)), "--as-of", DAY, "--catalog", str(catalog))
    assert done.exit_code == 2, done.output
    assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr, done.stderr
    assert "Traceback" not in done.output + done.stderr and catalog.read_bytes() == before


@pytest.mark.unit
def test_a_catalog_without_an_interruptible_aws_row_the_file_covers_is_left_unwritten(tmp_path):
    catalog = tmp_path / "catalog.csv"
    catalog.write_text(market.catalog_text(OFFERS[:1], version="v", source="s", as_of={"aws": dt.date(2026, 11, 28)},
                                           names=NAMES, terms=TERMS, interruptions=None).text)
    before = catalog.read_bytes()
    done = import_advisor("--file", str(advisor_file(tmp_path)), "--as-of", DAY, "--catalog", str(catalog))
    assert done.exit_code == 2 and "no interruptible AWS row whose instance and region the file covers" in done.stderr
    assert catalog.read_bytes() == before


@pytest.mark.unit
def test_imported_aws_spot_offers_carry_their_bands_assumption_and_the_rest_the_users(tmp_path, monkeypatch):
    read = gpuhunt.Read(OFFERS, {"aws": dt.date(2026, 11, 28), "gcp": dt.date(2026, 11, 28)},
                        {"aws": "test", "gcp": "test"}, "0.1.34")
    monkeypatch.setattr(gpuhunt, "read", lambda providers, gpus: read)
    out = tmp_path / "gpuhunt.csv"
    done = cli_runner().invoke(main, ["catalog", "import", "gpuhunt", "--out", str(out), "--spot-advisor",
                                      str(advisor_file(tmp_path)), "--spot-advisor-as-of", DAY, "--restart-hours", "0.25"])
    assert done.exit_code == 0, done.output
    spot = {(p.instance, p.region): p for p in load_catalog(out).packages if p.billing == "interruptible"}
    assert set(spot) == {("g5.xlarge", "us-east-1")}  # the open band, the uncovered region and GCP: no assumption
    advised = spot[("g5.xlarge", "us-east-1")].terms
    assert (advised.interruptions_per_day, advised.restart_hours) == (
        Decimal("0.003513"), Decimal("0.25"))
    assert advised.interruptions_source.startswith("AWS Spot Advisor 2026-12-01")
    assert "1 AWS spot offer(s) in Spot Advisor band >20%: band >20% reaches 100 % a month" in done.stdout
    assert "3 spot offer(s) left out" in done.stdout

    mixed = tmp_path / "mixed.csv"
    done = cli_runner().invoke(main, ["catalog", "import", "gpuhunt", "--out", str(mixed), "--spot-advisor",
                                      str(advisor_file(tmp_path)), "--spot-advisor-as-of", DAY, "--restart-hours", "0.25",
                                      "--interruptions-per-day", "2", "--interruptions-source", "our last month"])
    assert done.exit_code == 0, done.output
    sources = {(p.instance, p.region): p.terms.interruptions_source for p in load_catalog(mixed).packages
               if p.billing == "interruptible"}
    assert len(sources) == 4 and sources[("g5.xlarge", "us-east-1")].startswith("AWS Spot Advisor")
    assert sources[("g5.2xlarge", "us-east-1")] == sources[("g2-standard-4", "us-central1-a")] == "our last month"

    undated = cli_runner().invoke(main, ["catalog", "import", "gpuhunt", "--out", str(tmp_path / "undated.csv"),
                                         "--spot-advisor", str(advisor_file(tmp_path)), "--restart-hours", "0.25"])
    assert undated.exit_code == 2 and "carries no date" in undated.stderr and not (tmp_path / "undated.csv").exists()


@pytest.fixture
def gpuhunt_gpucost() -> Path:
    """The gpucost whose Python imports gpuhunt (.venv-market's, else this venv's); the test skips without one."""
    found = market_gpucost("gpuhunt")
    if found is None:
        pytest.skip("gpuhunt is installed neither in .venv-market nor here (make install builds .venv-market)")
    return found


@pytest.mark.integration
def test_gpuhunts_offline_spot_offers_carry_the_spot_advisors_band_through_gpuhunts_public_api(tmp_path, gpuhunt_gpucost):
    folder = tmp_path / "gpuhunt"
    folder.mkdir()
    line = "g5.xlarge,us-east-1,{},4,16.0,1,A10G,24.0,{},,nvidia,,x86,{{}}\n"
    (folder / "aws.csv").write_text(GPUHUNT_HEADER + line.format("1.006", False) + line.format("0.4012", True))
    (folder / "notes.csv").write_text("not,a,provider\n")  # a file gpuhunt does not know is not read as a catalog
    out = tmp_path / "aws.csv"
    done = subprocess.run([str(gpuhunt_gpucost), "catalog", "import", "gpuhunt", "--out", str(out), "--spot-advisor",
                           str(advisor_file(tmp_path)), "--spot-advisor-as-of", DAY, "--restart-hours", "0.25"],
                          env=dict(os.environ, GPUHUNT_CATALOG_DIR=str(folder)), capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    [spot] = [p for p in load_catalog(out).packages if p.billing == "interruptible"]
    assert (spot.price_per_lot, spot.terms.interruptions_per_day) == (Decimal("0.4012"), Decimal("0.003513"))
    assert spot.terms.interruptions_source.startswith("AWS Spot Advisor 2026-12-01 (Linux), us-east-1 g5.xlarge band 5-10%")
