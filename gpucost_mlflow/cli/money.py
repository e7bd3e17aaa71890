"""What the GPUs cost: `gpucost packages`, `window`, `plan` and `catalog` (`example`, `import`)."""

from __future__ import annotations

import datetime as dt
import tempfile
from dataclasses import dataclass
from pathlib import Path

import click

from gpucost_mlflow.cli.options import WholeNumber, _catalog
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.inputs.corpus import write_atomic
from gpucost_mlflow.core.money import costs, market, spot_advisor, units
from gpucost_mlflow.core.money.catalog import PACKAGE_DAYS, example_catalog, load_catalog
from gpucost_mlflow.core.money.plans import covering_plans, parse_hours, parse_positive, to_hours
from gpucost_mlflow.core.money.window import consecutive_needed, covers, window
from gpucost_mlflow.market import gpuhunt, skypilot


@click.command("packages")
@click.option("--gpu", required=True, help="GPU id in the catalog (rtx-4090, b200).")
@click.option("--days", type=WholeNumber(1), default=None,
              help="Package length; without it, the 3-, 7- and 30-day packages are listed.")
@click.option("--lots", type=WholeNumber(1), default=1, show_default=True,
              help="Number of lots (a lot holds the catalog's gpus_per_lot).")
@click.option("--accepted-results", type=WholeNumber(0), default=None,
              help="Distinct, finished and validated useful corpora.")
@click.option("--catalog", "catalog_file", type=click.Path(path_type=Path), default=None,
              help=f"Your catalog CSV (default: {shipped.CATALOG.as_posix()}, the newest shipped lab kit).")
def packages(gpu, days, lots, accepted_results, catalog_file) -> None:
    """Package calculator: total = price per lot x lots; cost per validated corpus only from accepted results."""

    catalog = _catalog(catalog_file)
    catalog.require_gpu(gpu)
    lengths = [days] if days is not None else list(PACKAGE_DAYS)
    if days is None:
        _echo_hourly(catalog, gpu)
    for length in lengths:
        _echo_package(catalog, gpu, length, lots, accepted_results)


def _echo_hourly(catalog, gpu: str) -> None:
    """One line per hourly rate of the GPU id, pointing at `gpucost plan` to price a window with it."""

    for rate in (p for p in catalog.for_gpu(gpu) if p.hourly):
        click.echo(f"{gpu}, hourly: {costs.money(rate.price_per_lot, rate.currency)} per lot-hour (lot of "
                   f"{rate.gpus_per_lot}; min {rate.terms.min_hours:g} h, billed per {rate.terms.increment_hours:g} h; "
                   f"catalog {catalog.version}): price a window with `gpucost plan --gpu {gpu} --hours H`")


def _echo_package(catalog, gpu: str, length: int, lots: int, accepted_results: int | None) -> None:
    """The total of one package length for the lots, and with accepted results the cost per validated corpus."""

    package = catalog.find(gpu, length)
    if package is None:
        click.echo(f"{gpu}, {length}-day package: not in catalog {catalog.version}")
        return
    held = costs.commit(package, lots)
    click.echo(
        f"{gpu}, {length}-day package, {lots} lot(s): {costs.money(held.total, package.currency)} for {held.gpus} "
        f"GPU(s) ({costs.money(package.price_per_lot, package.currency)} per lot of {package.gpus_per_lot}; catalog "
        f"{catalog.version})"
    )
    if accepted_results is not None:
        per = costs.cost_per_validated_corpus(held.total, accepted_results)
        click.echo(
            f"  cost per validated corpus: undefined ({units.NO_RESULT}); the committed "
            f"{costs.money(held.total, package.currency)} stays in the balance"
            if per is None else
            f"  cost per validated corpus: {costs.money(per, package.currency)} "
            f"({costs.money(held.total, package.currency)} / {accepted_results} accepted)"
        )


@click.command("window")
@click.option("--start", required=True, help="Local start of the access window, ISO (2026-11-30T09:00).")
@click.option("--end", required=True, help="Local end of the access window, ISO.")
@click.option("--tz", "tz_name", required=True, help="IANA time zone of both times (Europe/Amsterdam).")
@click.option("--gpu", default=None, help="Price every covering plan of this GPU id (packages and hourly rates).")
@click.option("--gpus", type=WholeNumber(1), default=1, show_default=True,
              help="GPUs the configuration uses (lots = ceil(GPUs / GPUs per lot)).")
@click.option("--catalog", "catalog_file", type=click.Path(path_type=Path), default=None)
def window_cmd(start, end, tz_name, gpu, gpus, catalog_file) -> None:
    """Real elapsed hours of a campaign window, which 3-, 7-, 30-day packages cover it, and its covering plans."""

    span = window(start, end, tz_name)
    catalog = None
    if gpu is not None:
        catalog = _catalog(catalog_file)
        catalog.require_gpu(gpu)
    click.echo(f"window {span.start.isoformat()} -> {span.end.isoformat()} ({tz_name}): {span.hours:g} h elapsed")
    for days in PACKAGE_DAYS:
        if covers(days, span.hours):
            click.echo(f"  {days}-day package ({days * 24} h): covers the window")
        else:
            click.echo(f"  {days}-day package ({days * 24} h): does not cover it; "
                       f"{consecutive_needed(days, span.hours)} consecutive packages needed")
    if not any(covers(days, span.hours) for days in PACKAGE_DAYS):
        click.echo("  no single package covers this window: budget the consecutive packages explicitly; "
                   "a rental is never extended automatically")
    if catalog is not None:
        _echo_plans(catalog, gpu, to_hours(span.hours), gpus, "table")


def _echo_plans(catalog, gpu: str, hours, gpus: int, fmt: str, deliverable_h: float = 0.0) -> None:
    """Every covering plan of one GPU id for the window, cheapest first (one planner for `plan` and `window`)."""
    import json


    plans = covering_plans(catalog.for_gpu(gpu), hours, gpus, deliverable_h)
    if fmt == "json":
        click.echo(json.dumps([p.as_dict() for p in plans], indent=2))
        return
    click.echo(f"covering plans for {gpu}, {gpus} GPU(s), {hours.normalize():f} h (catalog {catalog.version}), "
               "cheapest first:")
    for number, plan in enumerate(plans, 1):
        example = " [example price]" if plan.offer.example else ""
        click.echo(f"  {number}. {plan.describe()}{example}")
    click.echo("  consecutive periods are budgeted explicitly: a rental is never extended automatically")


@click.command("plan")
@click.option("--gpu", required=True, help="GPU id in the catalog (rtx-4090, b200, or your own row's id).")
@click.option("--hours", required=True, help="The whole window to cover, in hours (a decimal number > 0).")
@click.option("--gpus", type=WholeNumber(1), default=1, show_default=True,
              help="GPUs the configuration uses (lots = ceil(GPUs / GPUs per lot)).")
@click.option("--catalog", "catalog_file", type=click.Path(path_type=Path), default=None,
              help=f"Your catalog CSV (default: {shipped.CATALOG.as_posix()}, the newest shipped lab kit).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--deliverable-hours", default="0", show_default=True,
              help="Hours one deliverable takes: an interruption on an interruptible row loses half of it on average.")
def plan_cmd(gpu, hours, gpus, catalog_file, fmt, deliverable_hours) -> None:
    """Every way the catalog covers the window (package x consecutive periods x lots, or hours billed), cheapest first;
    an interruptible row at its P90 total, the expected total beside it."""

    window_hours = parse_hours(hours)
    deliverable = float(parse_hours(deliverable_hours, "--deliverable-hours")) if deliverable_hours != "0" else 0.0
    catalog = _catalog(catalog_file)
    catalog.require_gpu(gpu)
    _echo_plans(catalog, gpu, window_hours, gpus, fmt, deliverable)


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


COMMANDS = (packages, window_cmd, plan_cmd, catalog_group)
