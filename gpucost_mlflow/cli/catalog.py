"""The price lists: `gpucost catalog example` (this machine at an example price) and `catalog import` (a market
library's catalog, or Spot Advisor's bands for a catalog's interruptible rows)."""

from __future__ import annotations

import datetime as dt
import tempfile
from dataclasses import dataclass
from pathlib import Path

import click

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.inputs.corpus import write_atomic
from gpucost_mlflow.core.money import market, spot_advisor
from gpucost_mlflow.core.money.catalog import example_catalog, load_catalog
from gpucost_mlflow.core.money.plans import parse_hours, parse_positive
from gpucost_mlflow.market import gpuhunt, skypilot


@click.group("catalog")
def catalog_group() -> None:
    """Price lists: write a what-if catalog for the machine you have."""


def machine_shape() -> str:
    """This machine as one would order it: its usable cores and its memory ('2 vCPU 23 GiB')."""
    import os

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 0)
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        return f"{cores} vCPU"
    return f"{cores} vCPU {memory:.0f} GiB"


@catalog_group.command("example")
@click.option("--out", "out_path", type=click.Path(path_type=Path), required=True,
              help="The CSV to write (never overwritten).")
@click.option("--price-per-hour", default="0.10", show_default=True, help="Example price of this machine for one hour.")
@click.option("--currency", default="USD", show_default=True)
@click.option("--min-hours", default="1", show_default=True)
@click.option("--increment-hours", default="1", show_default=True)
@click.option("--device", "device_choice", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True)
def catalog_example(out_path, price_per_hour, currency, min_hours, increment_hours, device_choice) -> None:
    """One hourly row for this machine's device, as passes name it, labelled "example price"; edit it to your rate."""
    import datetime as dt

    from gpucost_mlflow.execution.devices import device_names  # deferred: imports torch
    from gpucost_mlflow.execution.models import resolve_device  # deferred: imports torch

    if out_path.exists():
        raise GpucostError(f"{out_path} exists: edit it, or remove it to write a new example")
    price = parse_positive(price_per_hour, "--price-per-hour")
    device = device_names(resolve_device(device_choice))[0]
    text = example_catalog(device, price, currency, parse_hours(min_hours, "--min-hours"),
                           parse_hours(increment_hours, "--increment-hours"), dt.date.today().isoformat(),
                           machine_shape())
    write_atomic(out_path, text.encode("utf-8"))
    load_catalog(out_path)
    click.echo(f"{out_path}: {device} ({machine_shape()}) at an example price of {price} {currency.upper()} per hour; "
               "edit it to price your machine")


@catalog_group.group("import")
def catalog_import() -> None:
    """Write a gpucost catalog from a market library's own catalog, or set its interruptible rows' assumption from
    AWS Spot Advisor's published bands (docs/catalogs.md)."""


@dataclass(frozen=True)
class MarketWrite:
    """What every import is told: the CSV to write, the names and billing tables, and the spot assumption."""

    out_path: Path
    names_files: tuple[Path, ...] = ()
    terms_file: Path | None = None
    interruptions_per_day: str | None = None
    restart_hours: str | None = None
    interruptions_source: str | None = None
    spot_advisor_file: Path | None = None
    spot_advisor_as_of: str | None = None


def market_options(command):
    """What every import takes: where to write, the names and billing tables, and the spot assumption."""
    options = [
        click.option("--out", "out_path", type=click.Path(path_type=Path), required=True,
                     help="The catalog CSV to write (never overwritten)."),
        click.option("--device-names", "names_files", type=click.Path(path_type=Path), multiple=True,
                     help="Your own accelerator-to-driver-names rows, added to the shipped table (repeatable)."),
        click.option("--billing-terms", "terms_file", type=click.Path(path_type=Path), default=None,
                     help="A billing terms table instead of the shipped one (provider, min_seconds, "
                          "increment_seconds)."),
        click.option("--interruptions-per-day", default=None, help="Spot offers: interruptions you expect per day."),
        click.option("--restart-hours", default=None, help="Spot offers: hours one restart costs."),
        click.option("--interruptions-source", default=None, help="Spot offers: where your expectation comes from."),
        click.option("--spot-advisor", "spot_advisor_file", type=click.Path(path_type=Path), default=None,
                     help="AWS spot offers: AWS Spot Advisor's spot-advisor-data.json, each offer at its band's upper "
                          "edge (needs --restart-hours and --spot-advisor-as-of)."),
        click.option("--spot-advisor-as-of", default=None,
                     help="The day the --spot-advisor file was downloaded (YYYY-MM-DD)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _split(text: str | None) -> list[str] | None:
    return [part.strip() for part in text.split(",") if part.strip()] if text else None


@catalog_import.command("skypilot")
@click.option("--clouds", default=None, help="Comma-separated SkyPilot clouds (default: those cached here).")
@click.option("--gpus", default=None, help="Comma-separated accelerator names as SkyPilot spells them (A10G,A100).")
@click.option("--regions", default=None, help="Comma-separated regions.")
@market_options
def import_skypilot(clouds, gpus, regions, **market) -> None:
    """Hourly rows (one per cloud, instance type and region) from SkyPilot's catalog, through SkyPilot's API."""

    read = skypilot.read(_split(clouds), _split(gpus), _split(regions))
    dates = "; ".join(f"{cloud} as of {day.isoformat()} ({read.dated_by[cloud]})" for cloud, day in read.as_of.items())
    _write_market(read.offers, version=f"skypilot-{read.schema}-{max(read.as_of.values()).isoformat()}",
                  source=f"SkyPilot {read.version} catalog {read.schema}", as_of=read.as_of, dates=dates,
                  options=MarketWrite(**market))


@catalog_import.command("gpuhunt")
@click.option("--providers", default=None,
              help="Comma-separated gpuhunt providers (aws, gcp, lambdalabs, runpod, ...).")
@click.option("--gpus", default=None, help="Comma-separated GPU names as gpuhunt spells them (A10G,L4,A100).")
@market_options
def import_gpuhunt(providers, gpus, **market) -> None:
    """Hourly rows (one per provider, instance and location) from gpuhunt's catalog, through gpuhunt's API; offline
    from GPUHUNT_CATALOG_DIR."""

    read = gpuhunt.read(_split(providers), _split(gpus))
    dates = "; ".join(f"{name} as of {day.isoformat()} ({read.dated_by[name]})" for name, day in read.as_of.items())
    _write_market(read.offers, version=f"gpuhunt-{max(read.as_of.values()).isoformat()}",
                  source=f"gpuhunt {read.version} catalog", as_of=read.as_of, dates=dates,
                  options=MarketWrite(**market))


def _write_market(offers, *, version: str, source: str, as_of: dict, dates: str, options: MarketWrite) -> None:
    """Turn offers into catalog rows (core/money/market.py), write them whole, read them back, and say what was left."""

    out_path = options.out_path
    if out_path.exists():
        raise GpucostError(f"{out_path} exists: remove it, or name another --out")
    interruptions = _users_assumption(options)
    advised = _advised(offers, options)
    names = market.load_device_names([shipped.shipped(shipped.DEVICE_NAMES), *options.names_files])
    terms = market.load_terms(options.terms_file or shipped.shipped(shipped.BILLING_TERMS))
    imported = market.catalog_text(offers, version=version, source=source, as_of=as_of, names=names, terms=terms,
                                   interruptions=interruptions, advised=advised)
    write_atomic(out_path, imported.text.encode("utf-8"))
    try:
        load_catalog(out_path)
    except GpucostError:
        out_path.unlink()
        raise
    for note in imported.notes:
        click.echo(note)
    click.echo(f"{out_path}: {imported.rows} row(s) from {source}; {dates}")


def _users_assumption(options: MarketWrite) -> market.Interruptions | None:
    """The user's own interruption assumption for spot offers: all three options, or none (with --spot-advisor,
    --restart-hours alone is its restart)."""
    rate = (options.interruptions_per_day, options.interruptions_source)
    if options.spot_advisor_file is not None and not options.restart_hours:
        raise GpucostError("--spot-advisor needs --restart-hours (the hours one restart costs)")
    if options.spot_advisor_file is not None and any(rate) and not all(rate):
        raise GpucostError("--interruptions-per-day and --interruptions-source go together")
    if (options.spot_advisor_file is None and any((*rate, options.restart_hours))
            and not all((*rate, options.restart_hours))):
        raise GpucostError("spot offers need all three: --interruptions-per-day, --restart-hours and "
                           "--interruptions-source")
    if not all(rate):
        return None
    return market.Interruptions(parse_positive(options.interruptions_per_day, "--interruptions-per-day"),
                                parse_positive(options.restart_hours, "--restart-hours"), options.interruptions_source)


def _advised(offers, options: MarketWrite) -> dict[tuple[str, str, str], market.Interruptions]:
    """Each AWS spot offer's assumption from AWS Spot Advisor's band, where --spot-advisor gives one that bounds a
    rate; one line per band that bounds none."""
    if options.spot_advisor_file is None:
        return {}
    advisor = spot_advisor.read(options.spot_advisor_file, _as_of(options.spot_advisor_as_of, "--spot-advisor-as-of"))
    advised, notes = spot_advisor.assumptions(advisor, offers, parse_positive(options.restart_hours, "--restart-hours"))
    for note in notes:
        click.echo(note)
    return advised


def _as_of(text: str | None, option: str) -> dt.date | None:
    """A date the user gives for a file that carries none (YYYY-MM-DD, not in the future); None when not given."""
    if text is None:
        return None
    try:
        day = dt.date.fromisoformat(text.strip())
    except ValueError:
        raise GpucostError(f"{option} '{text}' is not a date (YYYY-MM-DD)") from None
    if day > dt.date.today():
        raise GpucostError(f"{option} {text} is in the future: give the day the file was downloaded")
    return day


@catalog_import.command("spot-advisor")
@click.option("--file", "advisor_file", type=click.Path(path_type=Path), required=True,
              help="AWS Spot Advisor's spot-advisor-data.json, as downloaded (docs/catalogs.md).")
@click.option("--as-of", default=None, help="The day the file was downloaded (YYYY-MM-DD): the file carries no date.")
@click.option("--catalog", "catalog_file", type=click.Path(path_type=Path), required=True,
              help="The catalog CSV whose interruptible AWS rows are set (rewritten whole, in place).")
def import_spot_advisor(advisor_file, as_of, catalog_file) -> None:
    """Set the interruption rate and source of a catalog's interruptible AWS rows from AWS Spot Advisor's published
    bands, at each band's upper edge (the plan's P90); every other cell is kept."""

    advisor = spot_advisor.read(advisor_file, _as_of(as_of, "--as-of"))
    load_catalog(catalog_file)
    done = spot_advisor.rewrite(catalog_file, catalog_file.read_text(encoding="utf-8"), advisor)
    for note in done.notes:
        click.echo(note)
    if not done.rows:
        raise GpucostError(f"{catalog_file}: no interruptible AWS row whose instance and region the file covers: "
                           "nothing written")
    with tempfile.TemporaryDirectory() as folder:  # the rewritten catalog must read before it replaces the old one
        check = Path(folder) / catalog_file.name
        check.write_text(done.text, encoding="utf-8")
        load_catalog(check)
    write_atomic(catalog_file, done.text.encode("utf-8"))
    click.echo(f"{catalog_file}: {done.rows} interruptible row(s) set from {advisor.source} (P90 at each band's upper "
               "edge)")


COMMANDS = (catalog_group,)
