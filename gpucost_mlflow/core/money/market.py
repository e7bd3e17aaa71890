"""Offers read from a market library's catalog (SkyPilot, gpuhunt), turned into gpucost catalog rows.

Pure: the libraries are read at the edge (gpucost_mlflow/market/); this module takes their offers as plain data, with
the two shipped, dated, editable tables it needs: the driver's names of each accelerator (so a measured device meets
its offers) and each provider's billing terms (minimum and increment). It never guesses: an accelerator the names
table cannot map keeps an empty device_names and is named in the import's notes; a provider without billing terms
is refused; spot offers become interruptible rows only with an interruption assumption: a published band's
(core/money/spot_advisor.py) or the user's.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money import billing
from gpucost_mlflow.core.money.billing.base import number
from gpucost_mlflow.core.money.catalog import COLUMNS, DATED_COLUMNS, OFFER_COLUMNS, as_of_date, csv_rows

SECONDS_PER_HOUR = Decimal(3600)
MEMORY_TOLERANCE_GIB = 2.0  # 40 GiB in one catalog is 40,960 MiB in another


@dataclass(frozen=True)
class Offer:
    """One instance type in one region, as the library lists it: per instance-hour, in USD."""

    provider: str
    instance: str
    region: str
    accelerator: str
    count: int
    memory_gib: float | None  # per GPU; None when the library does not say
    price: Decimal | None
    spot_price: Decimal | None


@dataclass(frozen=True)
class Interruptions:
    """The user's expectation for spot offers (without it, spot offers are left out)."""

    per_day: Decimal
    restart_hours: Decimal
    source: str


@dataclass(frozen=True)
class NamesRow:
    accelerator: str
    memory_gib: float | None
    device_names: tuple[str, ...]
    as_of: dt.date
    source: str


@dataclass(frozen=True)
class Terms:
    provider: str
    min_hours: Decimal
    increment_hours: Decimal
    as_of: dt.date
    source: str
    table: str


def _positive(path: Path, line: int, column: str, text: str) -> Decimal:
    value = number(path, line, column, text)
    if value <= 0:
        raise GpucostError(f"{path}:{line}: {column} '{text}' must be > 0")
    return value


def _dated(path: Path, line: int, text: str) -> dt.date:
    found = as_of_date(path, line, text)
    if found is None:
        raise GpucostError(f"{path}:{line}: empty as_of (a shipped table is dated)")
    return found


def load_device_names(paths: Iterable[Path]) -> list[NamesRow]:
    """The accelerator-to-driver-names table: the shipped one, then the user's (a later row for the same
    accelerator and memory replaces an earlier one)."""
    rows: dict[tuple[str, float | None], NamesRow] = {}
    for path in paths:
        reader = csv_rows(path, ("accelerator", "memory_gib", "device_names", "as_of", "source"), "device names table")
        for record in reader:
            line = reader.line_num
            values = {k: (v or "").strip() for k, v in record.items() if k}
            if not values["accelerator"] or not values["source"]:
                raise GpucostError(f"{path}:{line}: empty accelerator or source")
            names = tuple(n.strip() for n in values["device_names"].split(";") if n.strip())
            if not names:
                raise GpucostError(f"{path}:{line}: empty device_names")
            memory = float(_positive(path, line, "memory_gib", values["memory_gib"])) if values["memory_gib"] else None
            row = NamesRow(values["accelerator"], memory, names, _dated(path, line, values["as_of"]), values["source"])
            rows[(row.accelerator.lower(), memory)] = row
    return list(rows.values())


def accelerator_for(table: list[NamesRow], device: str) -> str | None:
    """The market's accelerator name of a device as its driver names it (`NVIDIA L4` -> `L4`): the table's first row
    naming it; None when no row does (never a guess)."""
    return next((row.accelerator for row in table if device in row.device_names), None)


def names_for(table: list[NamesRow], accelerator: str, memory_gib: float | None) -> NamesRow | None:
    """The table's row for this accelerator: the one of its memory when the offer says it, else the one that names
    no memory; None when the table cannot map it (never a guess)."""
    same = [r for r in table if r.accelerator.lower() == accelerator.lower()]
    if memory_gib is not None:
        sized = [r for r in same if r.memory_gib is not None and abs(r.memory_gib - memory_gib) <= MEMORY_TOLERANCE_GIB]
        if sized:
            return sized[0]
    unsized = [r for r in same if r.memory_gib is None]
    return unsized[0] if unsized else None


def load_terms(path: Path) -> dict[str, Terms]:
    """Each provider's billing terms (minimum and increment, in seconds), dated and sourced."""
    reader = csv_rows(path, ("provider", "min_seconds", "increment_seconds", "as_of", "source"), "billing terms table")
    terms: dict[str, Terms] = {}
    for record in reader:
        line = reader.line_num
        values = {k: (v or "").strip() for k, v in record.items() if k}
        if not values["provider"] or not values["source"]:
            raise GpucostError(f"{path}:{line}: empty provider or source")
        terms[values["provider"].lower()] = Terms(
            values["provider"].lower(),
            _positive(path, line, "min_seconds", values["min_seconds"]) / SECONDS_PER_HOUR,
            _positive(path, line, "increment_seconds", values["increment_seconds"]) / SECONDS_PER_HOUR,
            _dated(path, line, values["as_of"]), values["source"], path.name)
    return terms


@dataclass(frozen=True)
class Imported:
    """The catalog CSV text, how many rows, and the lines the import prints (unmapped names, offers left out)."""

    text: str
    rows: int
    notes: list[str]


HEADER = COLUMNS + ("billing", *billing.INTERRUPTIBLE.columns) + DATED_COLUMNS + OFFER_COLUMNS


def catalog_text(offers: list[Offer], *, version: str, source: str, as_of: dict[str, dt.date], names: list[NamesRow],
                 terms: dict[str, Terms], interruptions: Interruptions | None,
                 advised: dict[tuple[str, str, str], Interruptions] | None = None) -> Imported:
    """One hourly row per (provider, instance, region) offer, and one interruptible row per spot offer with an
    interruption assumption: its own from `advised` (keyed by provider, instance and region: a published band), else
    the user's; `as_of` is the date of the catalog file read, per provider."""
    if not offers:
        raise GpucostError("no offer matches these filters: nothing written")
    missing = sorted({o.provider for o in offers if o.provider.lower() not in terms})
    if missing:
        raise GpucostError(f"no billing terms for {', '.join(missing)} in the billing terms table: add a row with its "
                           "minimum and increment (docs/catalogs.md)")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    unmapped: set[str] = set()
    spot_left_out = rows = 0
    for offer in sorted(offers, key=lambda o: (o.provider, o.accelerator, o.count, o.instance, o.region)):
        if offer.price is not None and offer.price <= 0 or offer.spot_price is not None and offer.spot_price <= 0:
            raise GpucostError(f"{offer.provider} {offer.instance} in {offer.region}: a price of 0 or less is not an "
                               "offer; nothing written")
        found = names_for(names, offer.accelerator, offer.memory_gib)
        if found is None:
            unmapped.add(f"{offer.accelerator}" + (f" ({offer.memory_gib:g} GiB)" if offer.memory_gib else ""))
        term = terms[offer.provider.lower()]
        base = [offer.provider.lower(), version, offer.accelerator.lower(),
                ";".join(found.device_names) if found else "",
                offer.count, ""]
        where = (f"{source}, {offer.provider} {offer.instance} in {offer.region}; billing terms {term.table} "
                 f"({term.source})")
        tail = [as_of[offer.provider].isoformat(), offer.instance, offer.region]
        hours = [term.min_hours, term.increment_hours]
        if offer.price is not None:
            writer.writerow(base + [offer.price, "USD", where, billing.HOURLY.name, *hours, "", "", ""] + tail)
            rows += 1
        if offer.spot_price is None:
            continue
        assumed = (advised or {}).get((offer.provider.lower(), offer.instance, offer.region), interruptions)
        if assumed is None:
            spot_left_out += 1
            continue
        writer.writerow(base + [offer.spot_price, "USD", f"{where}; spot price", billing.INTERRUPTIBLE.name, *hours,
                                assumed.per_day, assumed.restart_hours, assumed.source] + tail)
        rows += 1
    notes = [f"{name}: not in the device names table, written with empty device_names (no measured device matches "
             "it; add it with --device-names FILE)" for name in sorted(unmapped)]
    if spot_left_out:
        notes.append(f"{spot_left_out} spot offer(s) left out: no interruption assumption (give "
                     "--interruptions-per-day, --restart-hours and --interruptions-source to price them as "
                     "interruptible rows)")
    if not rows:
        raise GpucostError("no priced offer left for these filters: nothing written")
    return Imported(out.getvalue(), rows, notes)
