"""What the GPUs cost: `gpucost packages`, `window` and `plan`, priced from a catalog (cli/catalog.py writes one)."""

from __future__ import annotations

from pathlib import Path

import click

from gpucost_mlflow.cli.options import WholeNumber, _catalog
from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.money import costs, units
from gpucost_mlflow.core.money.catalog import PACKAGE_DAYS
from gpucost_mlflow.core.money.plans import covering_plans, parse_hours, to_hours
from gpucost_mlflow.core.money.window import consecutive_needed, covers, window


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


COMMANDS = (packages, window_cmd, plan_cmd)
