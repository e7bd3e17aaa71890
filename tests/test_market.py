"""Market catalogs (docs/catalogs.md): offers read through SkyPilot's own API from an offline SkyPilot home, turned
into gpucost rows with the shipped names and billing tables; spot offers priced only with the user's assumption."""

from __future__ import annotations

import csv
import datetime as dt
import functools
import io
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.money import market
from gpucost_mlflow.core.money.catalog import load_catalog
from gpucost_mlflow.core.money.plans import covering_plans, to_hours
from tests.helpers import ROOT
from tests.skypilot_home import skypilot_home


# `make install` puts SkyPilot in a venv of its own (.venv-market, the Makefile says why); this one when it has it.
@functools.cache
def market_gpucost(module: str) -> Path | None:
    """The gpucost of .venv-market, else of this venv, whose Python imports the market library (asked once per
    worker: importing SkyPilot to find out takes seconds)."""
    return next((p for p in (ROOT / ".venv-market" / "bin" / "gpucost", Path(sys.executable).parent / "gpucost")
                 if p.is_file() and subprocess.run([str(p.parent / "python"), "-c", f"import {module}"],
                                                   capture_output=True, check=False).returncode == 0), None)


NAMES = market.load_device_names([shipped.shipped(shipped.DEVICE_NAMES)])
TERMS = market.load_terms(shipped.shipped(shipped.BILLING_TERMS))
DAY = dt.date(2026, 11, 28)
A10G = market.Offer("aws", "g5.xlarge", "us-east-1", "A10G", 1, 24.0, Decimal("1.006"), Decimal("0.4012"))
MYSTERY = market.Offer("aws", "x9.large", "us-east-1", "Z900", 1, 48.0, Decimal("3.5"), None)
SPOT = market.Interruptions(Decimal(2), Decimal("0.5"), "our last month on aws")


def rows(imported: market.Imported) -> list[dict]:
    return list(csv.DictReader(io.StringIO(imported.text)))


def text(offers, interruptions=None, terms=TERMS) -> market.Imported:
    return market.catalog_text(offers, version="skypilot-v8-2026-11-28", source="SkyPilot 0.14.1 catalog v8",
                               as_of={"aws": DAY}, names=NAMES, terms=terms, interruptions=interruptions)


@pytest.mark.unit
def test_an_offer_becomes_an_hourly_row_billed_by_its_clouds_terms_and_named_as_its_driver_names_it():
    imported = text([A10G])
    [row] = rows(imported)
    assert {k: row[k] for k in ("provider", "gpu", "device_names", "gpus_per_lot", "days", "price_per_lot", "currency",
                                "billing", "as_of", "instance", "region")} == {
        "provider": "aws", "gpu": "a10g", "device_names": "NVIDIA A10G", "gpus_per_lot": "1", "days": "",
        "price_per_lot": "1.006", "currency": "USD", "billing": "hourly", "as_of": "2026-11-28",
        "instance": "g5.xlarge", "region": "us-east-1"}
    assert Decimal(row["min_hours"]) * 3600 == pytest.approx(Decimal(60)) and Decimal(row["increment_hours"]) * 3600 == pytest.approx(Decimal(1))
    assert "SkyPilot 0.14.1 catalog v8, aws g5.xlarge in us-east-1" in row["source"]
    assert "billing-terms-2026-12-02.csv" in row["source"] and "60-second minimum" in row["source"]
    assert imported.notes == [("1 spot offer(s) left out: no interruption assumption (give --interruptions-per-day, "
                               "--restart-hours and --interruptions-source to price them as interruptible rows)")]


@pytest.mark.unit
def test_an_accelerator_the_table_cannot_map_keeps_empty_device_names_and_is_named(tmp_path):
    imported = text([A10G, MYSTERY])
    assert [r["device_names"] for r in rows(imported) if r["gpu"] == "z900"] == [""]
    assert imported.notes[0].startswith("Z900 (48 GiB): not in the device names table, written with empty device_names")
    path = tmp_path / "imported.csv"
    path.write_text(imported.text)
    catalog = load_catalog(path)
    assert [p.instance for p in catalog.for_device("NVIDIA A10G")] == ["g5.xlarge"]
    assert catalog.for_device("NVIDIA Z900") == [] and catalog.for_device("") == []  # never priced by a guess


@pytest.mark.unit
def test_the_names_table_tells_40_from_80_gib_and_a_users_row_extends_it(tmp_path):
    assert market.names_for(NAMES, "A100", 40.0).device_names[0] == "NVIDIA A100-SXM4-40GB"
    assert market.names_for(NAMES, "a100", 80.0).device_names[0] == "NVIDIA A100-SXM4-80GB"
    assert market.names_for(NAMES, "A100", None) is None  # a memory-less A100 offer is not guessed to be either
    mine = tmp_path / "mine.csv"
    mine.write_text("accelerator,memory_gib,device_names,as_of,source\nZ900,,NVIDIA Z900,2026-12-01,our cluster\n")
    extended = market.load_device_names([shipped.shipped(shipped.DEVICE_NAMES), mine])
    assert market.names_for(extended, "Z900", 48.0).device_names == ("NVIDIA Z900",)


@pytest.mark.unit
def test_spot_rows_appear_only_with_an_assumption_and_are_planned_at_their_p90(tmp_path):
    assert [r["billing"] for r in rows(text([A10G]))] == ["hourly"]
    imported = text([A10G], SPOT)
    spot = [r for r in rows(imported) if r["billing"] == "interruptible"]
    assert len(spot) == 1 and spot[0]["price_per_lot"] == "0.4012"
    assert (spot[0]["interruptions_per_day"], spot[0]["restart_hours"], spot[0]["interruptions_source"]) == (
        "2", "0.5", "our last month on aws")
    assert imported.notes == []
    path = tmp_path / "spot.csv"
    path.write_text(imported.text)
    offers = load_catalog(path).for_device("NVIDIA A10G")
    plans = covering_plans(offers, to_hours(10.0), 1, 1.0)
    interruptible = next(p for p in plans if p.offer.billing == "interruptible")
    assert interruptible.rework is not None and interruptible.total > interruptible.expected_total
    assert interruptible.hours_billed > Decimal(10)  # billed for the P90 window, not the bare 10 h


@pytest.mark.unit
@pytest.mark.parametrize(("offers", "terms", "message"), [
    ([], TERMS, "no offer matches these filters"),
    ([market.Offer("azure", "nc4", "eastus", "T4", 1, 16.0, Decimal("0.5"), None)], TERMS,
     "no billing terms for azure in the billing terms table"),
    ([market.Offer("aws", "g5.xlarge", "us-east-1", "A10G", 1, 24.0, Decimal(0), None)], TERMS,
     "a price of 0 or less is not an offer"),
])
def test_bad_market_input_is_one_line_and_nothing_is_written(offers, terms, message):
    with pytest.raises(GpucostError, match=message):
        text(offers, terms=terms)


@pytest.mark.unit
@pytest.mark.parametrize(("table", "body", "message"), [
    ("names", "accelerator,memory_gib,device_names,as_of,source\nZ900,-4,NVIDIA Z900,2026-12-01,me\n",
     "memory_gib '-4' must be > 0"),
    ("names", "accelerator,memory_gib,device_names,source\nZ900,,NVIDIA Z900,me\n", r"missing column\(s\) as_of"),
    ("terms", "provider,min_seconds,increment_seconds,as_of,source\naws,60,0,2026-12-01,me\n",
     "increment_seconds '0' must be > 0"),
    ("terms", "provider,min_seconds,increment_seconds,as_of,source\naws,60,1,yesterday,me\n", "as_of 'yesterday'"),
])
def test_a_malformed_names_or_billing_table_is_one_line_naming_file_and_line(tmp_path, table, body, message):
    path = tmp_path / f"{table}.csv"
    path.write_text(body)
    with pytest.raises(GpucostError, match=message):
        market.load_device_names([path]) if table == "names" else market.load_terms(path)


@pytest.mark.unit
def test_a_missing_market_library_is_one_line_with_its_install_command(monkeypatch):
    from gpucost_mlflow import market as edge

    monkeypatch.setitem(sys.modules, "gpuhunt_not_here", None)
    with pytest.raises(GpucostError, match=r"pip install 'gpucost-mlflow\[gpuhunt\]'"):
        edge.require("gpuhunt_not_here", "gpuhunt")


def import_skypilot(home: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    """`gpucost catalog import skypilot` in a process whose HOME is the seeded one (SkyPilot reads it at import)."""
    env = dict(os.environ, HOME=str(home))
    return subprocess.run([str(market_gpucost("sky")), "catalog", "import", "skypilot", "--out", str(out), *args], env=env,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.integration
def test_skypilots_catalog_is_imported_through_its_api_one_row_per_instance_and_region(tmp_path):
    if market_gpucost("sky") is None:
        pytest.skip("SkyPilot is installed neither in .venv-market nor here (make install builds .venv-market)")
    home = skypilot_home(tmp_path / "home", dt.date(2026, 11, 28))
    out = tmp_path / "aws.csv"
    done = import_skypilot(home, out, "--clouds", "aws", "--gpus", "A10G,A100")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "aws as of 2026-11-28 (the day SkyPilot downloaded it)" in done.stdout
    assert "3 spot offer(s) left out" in done.stdout and "Warning" not in done.stderr
    catalog = load_catalog(out)
    found = {(p.gpu, p.instance, p.region): p for p in catalog.packages}
    assert set(found) == {("a10g", "g5.xlarge", "us-east-1"), ("a10g", "g5.xlarge", "eu-west-1"),
                          ("a100", "p4d.24xlarge", "us-east-1")}
    a100 = found[("a100", "p4d.24xlarge", "us-east-1")]
    assert (a100.gpus_per_lot, a100.price_per_lot, a100.billing, a100.as_of) == (8, Decimal("32.7726"), "hourly", DAY)
    assert a100.device_names == ("NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB")
    assert a100.provider == "aws" and a100.catalog_version == "skypilot-v8-2026-11-28"
    assert a100.source.startswith("SkyPilot ") and "catalog v8, aws p4d.24xlarge in us-east-1" in a100.source
    assert found[("a10g", "g5.xlarge", "us-east-1")].price_per_lot == Decimal("1.006")

    spot_out = tmp_path / "spot.csv"
    done = import_skypilot(home, spot_out, "--clouds", "aws", "--gpus", "A10G", "--regions", "us-east-1",
                           "--interruptions-per-day", "2", "--restart-hours", "0.5",
                           "--interruptions-source", "our last month on aws")
    assert done.returncode == 0, done.stderr[-2000:]
    spot = [p for p in load_catalog(spot_out).packages if p.billing == "interruptible"]
    assert [(p.price_per_lot, p.terms.interruptions_per_day) for p in spot] == [(Decimal("0.4012"), Decimal(2))]  # cheapest zone

    # Filters that match nothing are refused by core/money/market.py (the unit test above), whatever the library.
    refused = import_skypilot(home, tmp_path / "refused.csv", "--clouds", "nosuchcloud")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr[-2000:]
    assert "unknown cloud(s) nosuchcloud" in refused.stderr and not (tmp_path / "refused.csv").exists()


GPUHUNT_HEADER = ("instance_name,location,price,cpu,memory,gpu_count,gpu_name,gpu_memory,spot,disk_size,gpu_vendor,flags,"
                  "cpu_arch,provider_data\n")


@pytest.mark.integration
def test_gpuhunts_offline_catalog_is_imported_through_its_api_spot_joined_to_its_on_demand_offer(tmp_path):
    gpucost = market_gpucost("gpuhunt")
    if gpucost is None:
        pytest.skip("gpuhunt is installed neither in .venv-market nor here (make install builds .venv-market)")
    folder = tmp_path / "gpuhunt"
    folder.mkdir()
    (folder / "aws.csv").write_text(GPUHUNT_HEADER + "g5.xlarge,us-east-1,1.006,4,16.0,1,A10G,24.0,False,,nvidia,,x86,{}\n"
                                    "g5.xlarge,us-east-1,0.4012,4,16.0,1,A10G,24.0,True,,nvidia,,x86,{}\n"
                                    "m5.large,us-east-1,0.096,2,8.0,0,,,False,,,,x86,{}\n")
    (folder / "gcp.csv").write_text(GPUHUNT_HEADER + "g2-standard-4,us-central1-a,0.7069,4,16.0,1,L4,24.0,False,,nvidia,,x86,{}\n"
                                    "a2-highgpu-1g,us-central1-a,3.6730,12,85.0,1,A100,40.0,False,,nvidia,,x86,{}\n")
    stamp = dt.datetime(2026, 11, 27, 12).timestamp()
    for path in folder.iterdir():
        os.utime(path, (stamp, stamp))
    env = dict(os.environ, GPUHUNT_CATALOG_DIR=str(folder))

    def run(out: Path, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(gpucost), "catalog", "import", "gpuhunt", "--out", str(out), *args], env=env,
                              capture_output=True, text=True, timeout=300, check=False)

    done = run(tmp_path / "all.csv", "--interruptions-per-day", "1", "--restart-hours", "0.25",
               "--interruptions-source", "gpuhunt test")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "aws as of 2026-11-27 (the date of aws.csv in GPUHUNT_CATALOG_DIR)" in done.stdout
    found = {(p.provider, p.instance, p.region, p.billing): p for p in load_catalog(tmp_path / "all.csv").packages}
    assert set(found) == {("aws", "g5.xlarge", "us-east-1", "hourly"), ("aws", "g5.xlarge", "us-east-1", "interruptible"),
                          ("gcp", "g2-standard-4", "us-central1-a", "hourly"),
                          ("gcp", "a2-highgpu-1g", "us-central1-a", "hourly")}
    assert found[("aws", "g5.xlarge", "us-east-1", "interruptible")].price_per_lot == Decimal("0.4012")
    l4 = found[("gcp", "g2-standard-4", "us-central1-a", "hourly")]
    assert (l4.gpu, l4.device_names, l4.gpus_per_lot, l4.price_per_lot, l4.as_of) == (
        "l4", ("NVIDIA L4",), 1, Decimal("0.7069"), dt.date(2026, 11, 27))
    assert l4.source.startswith("gpuhunt ") and "gcp g2-standard-4 in us-central1-a" in l4.source
    assert found[("gcp", "a2-highgpu-1g", "us-central1-a", "hourly")].device_names[0] == "NVIDIA A100-SXM4-40GB"

    refused = run(tmp_path / "refused.csv", "--providers", "nosuchprovider")
    assert refused.returncode == 2 and "unknown provider(s) nosuchprovider" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and not (tmp_path / "refused.csv").exists()


@pytest.mark.unit
def test_a_report_over_two_devices_priced_from_two_imported_catalogs_names_the_offer_it_commits_to(experiment, tmp_path):
    """Passes on an A10G and an L4; SkyPilot's AWS offers and gpuhunt's GCP offers, read as one: the decision commits to
    the cheapest covering offer and names its provider, instance and region; the A100 offer, measured nowhere, is
    listed apart and never priced."""
    from click.testing import CliRunner

    from gpucost_mlflow.cli import main
    from tests.helpers import SHIPPED_PROTOCOL, VARIANTS
    from tests.scenario import EXPERIMENT

    aws = text([A10G, market.Offer("aws", "g5.xlarge", "eu-west-1", "A10G", 1, 24.0, Decimal("1.258"), None)])
    gcp = market.catalog_text(
        [market.Offer("gcp", "g2-standard-4", "us-central1-a", "L4", 1, 24.0, Decimal("0.7069"), None),
         market.Offer("gcp", "a2-highgpu-1g", "us-central1-a", "A100", 1, 40.0, Decimal("3.673"), None)],
        version="gpuhunt-2026-11-27", source="gpuhunt 0.1.34 catalog", as_of={"gcp": dt.date(2026, 11, 27)},
        names=NAMES, terms=TERMS, interruptions=None)
    (tmp_path / "aws.csv").write_text(aws.text)
    (tmp_path / "gcp.csv").write_text(gcp.text)
    for seconds in (10.0, 10.1, 10.2, 10.1, 10.0):
        experiment("batch8", "NVIDIA A10G", seconds)
        experiment("batch8", "NVIDIA L4", seconds * 1.2)
    result = CliRunner().invoke(main, ["report", "--experiment", EXPERIMENT, "--protocol", str(SHIPPED_PROTOCOL),
                                       "--variants-file", str(VARIANTS), "--catalog", str(tmp_path / "aws.csv"),
                                       "--catalog", str(tmp_path / "gcp.csv"), "--out", str(tmp_path / "r"), "--no-log"])
    assert result.exit_code == 0, result.output
    decision = next(line for line in result.output.splitlines() if line.startswith("Decision:"))
    assert "batch8 on NVIDIA L4" in decision and "on gcp g2-standard-4 in us-central1-a" in decision, decision
    assert "next: batch8 on NVIDIA A10G" in decision
    page = (tmp_path / "r" / "report.md").read_text()
    assert "### Offers not measured" in page
    assert "- a100 (NVIDIA A100-SXM4-40GB; NVIDIA A100-PCIE-40GB): 1 row, the cheapest 3.673 USD per lot-hour" in page
    assert "l4 hourly, 1 lot, 4.0292 h billed (min 60 s, per 1 s) on gcp g2-standard-4 in us-central1-a" in page
    a10g_row = next(line for line in page.splitlines() if line.startswith("| NVIDIA A10G | batch8 |") and "hourly" in line)
    assert "on aws g5.xlarge in us-east-1: 4.05 USD" in a10g_row and "on aws g5.xlarge in eu-west-1" in a10g_row  # next plans

    (tmp_path / "eur.csv").write_text(gcp.text.replace(",USD,", ",EUR,").replace("gcp,", "ovh,"))
    mixed = CliRunner().invoke(main, ["report", "--experiment", EXPERIMENT, "--protocol", str(SHIPPED_PROTOCOL),
                                      "--variants-file", str(VARIANTS), "--catalog", str(tmp_path / "aws.csv"),
                                      "--catalog", str(tmp_path / "eur.csv"), "--out", str(tmp_path / "m"), "--no-log"])
    assert mixed.exit_code == 2 and "one comparison uses one currency" in mixed.output
    assert not (tmp_path / "m").exists()


@pytest.mark.unit
def test_a_pass_on_a_device_the_names_table_cannot_map_stays_not_priced(experiment, tmp_path):
    """The Z900 offer is imported with empty device_names: a pass on an NVIDIA Z900 meets no row and is not priced by a
    guess; the offer is listed among those not measured."""
    from tests.scenario import report

    (tmp_path / "z.csv").write_text(text([MYSTERY]).text)
    for seconds in (7.5, 7.6, 7.7, 7.4, 7.8):
        experiment("batch8", "NVIDIA Z900", seconds)
    built, _ = report(catalog=tmp_path / "z.csv")
    assert built.decision.startswith("No decision: nothing priced (not priced: NVIDIA Z900 has no package in"), built.decision
    listed = {title: lines for title, _, lines in built.lists}["Offers not measured"]
    assert listed == [("z900 (device names unknown): 1 row, the cheapest 3.50 USD per lot-hour: z900 hourly (min 60 s, "
                      "per 1 s) on aws x9.large in us-east-1")]
