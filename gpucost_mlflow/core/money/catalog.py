"""Catalogs: versioned CSV price lists of fixed packages, hourly and interruptible rates and per-token tiers, every
row validated and dated, money as Decimal. How a row is billed is its billing kind's (core/money/billing/)."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money import billing
from gpucost_mlflow.core.money.billing.base import Terms, number, whole

COLUMNS = ("provider", "catalog_version", "gpu", "device_names", "gpus_per_lot", "days", "price_per_lot", "currency",
           "source")
# Optional columns: a catalog without them holds fixed packages only (billing `package`); each billing kind names
# the columns its rows read (min and increment hours, an interruptible row's expectation); as_of: when the price was
# observed.
HOURLY_COLUMNS = ("billing", *billing.HOURLY.columns)
DATED_COLUMNS = ("as_of",)
# Optional too, on rows imported from a market catalog (`gpucost catalog import`): the instance type and region.
OFFER_COLUMNS = ("instance", "region")
UNDATED = "undated price"
PACKAGE_DAYS = (3, 7, 30)
EXAMPLE_PRICE = "example price"


@dataclass(frozen=True)
class Package:
    """One catalog row: a lot of gpus_per_lot GPUs, either for `days` days (billing `package`) or by the
    hour (billing `hourly`: price_per_lot is one lot for one hour, billed per min_hours / increment_hours). What only
    its billing kind reads (min and increment hours, an interruptible row's expectation, a per-token row's prices and
    tier) is that kind's own record, `terms`."""

    provider: str
    catalog_version: str
    gpu: str
    device_names: tuple[str, ...]
    gpus_per_lot: int
    days: int | None
    price_per_lot: Decimal
    currency: str
    source: str
    line: int
    billing: str = "package"
    terms: Terms | None = None  # the kind's own terms (HourlyTerms, ...); None for a package
    as_of: dt.date | None = None  # when the price was observed (None: an undated price)
    as_of_from_version: bool = False  # no as_of column: the date is the catalog_version's (a dated snapshot's name)
    instance: str = ""  # an imported offer: the instance type ...
    region: str = ""  # ... and the region it is offered in

    @property
    def kind(self) -> billing.Billing:
        """How this row is billed (core/money/billing/)."""
        return billing.kind(self.billing)

    @property
    def billed_as(self) -> str:
        """What sets the row apart from its provider's other rows of the GPU: '7 days', 'hourly rate', 'list tier'."""
        return self.kind.billed_as(self)

    @property
    def hourly(self) -> bool:
        """Billed by the hour (an interruptible row is too)."""
        return self.kind.by_the_hour

    def age_days(self, today: dt.date) -> int | None:
        """Days since the price was observed; None when the row carries no as_of."""
        return (today - self.as_of).days if self.as_of else None

    def dated(self, today: dt.date) -> str:
        """'as of 2026-09-24 (68 days)', from a version named by its date 'as of 2026-09-24 (68 days, the catalog
        version's date)', or 'undated price' where neither says when."""
        age = self.age_days(today)
        if age is None:
            return UNDATED
        named = ", the catalog version's date" if self.as_of_from_version else ""
        return f"as of {self.as_of.isoformat()} ({age} days{named})"

    @property
    def example(self) -> bool:
        """A what-if price (its source says "example price"), never a provider's quote."""
        return EXAMPLE_PRICE in self.source.lower()

    @property
    def offer(self) -> str:
        """An imported offer's 'aws g5.xlarge in us-east-1'; '' for a row that names no instance."""
        if not self.instance:
            return ""
        return f"{self.provider} {self.instance}" + (f" in {self.region}" if self.region else "")

    def describe(self) -> str:
        """rtx-4090 7-day package / cpu hourly (min 1 h, per 1 h) / cpu interruptible hourly (...), and where an
        imported offer is: 'a10g hourly (min 60 s, per 1 s) on aws g5.xlarge in us-east-1'."""
        return self.kind.describe(self) + (f" on {self.offer}" if self.offer else "")


@dataclass(frozen=True)
class Catalog:
    path: str
    version: str
    currency: str
    packages: tuple[Package, ...]
    stale: tuple[Package, ...] = ()  # rows set aside as older than the protocol's max_price_age_days

    def gpus(self) -> list[str]:
        return sorted({p.gpu for p in self.packages})

    @property
    def example(self) -> bool:
        """Whether any of its prices is an example price (a what-if catalog)."""
        return any(p.example for p in self.packages)

    def find(self, gpu: str, days: int) -> Package | None:
        """The fixed package for this GPU and length, or None when the catalog has no such row."""
        for package in self.packages:
            if package.gpu == gpu and not package.hourly and package.days == days:
                return package
        return None

    def for_gpu(self, gpu: str) -> list[Package]:
        """Every row of this GPU id: packages and hourly rates."""
        return [p for p in self.packages if p.gpu == gpu]

    def require_gpu(self, gpu: str) -> None:
        if gpu not in self.gpus():
            raise GpucostError(f"GPU '{gpu}' is not in catalog {self.version} ({self.path}); known: "
                               f"{', '.join(self.gpus())}")

    def for_device(self, device_name: str, rows: tuple[Package, ...] | None = None) -> list[Package]:
        """Packages whose GPU the driver reports under this name (case-insensitive exact match)."""
        wanted = device_name.strip().lower()
        return [p for p in (self.packages if rows is None else rows)
                if wanted in (name.lower() for name in p.device_names)]

    def not_measured(self, devices: set[str]) -> dict[str, list[Package]]:
        """By GPU id, cheapest lot first, the rows whose GPU no measured device is (or whose device names are
        unknown): never priced into a decision, listed so a user sees what a campaign there would add."""
        measured = {d.strip().lower() for d in devices}
        found: dict[str, list[Package]] = {}
        for p in self.packages:
            if not measured & {n.lower() for n in p.device_names}:
                found.setdefault(p.gpu, []).append(p)
        return {gpu: sorted(rows, key=lambda p: (not p.kind.per_lot, p.price_per_lot, p.line))
                for gpu, rows in sorted(found.items())}

    def stale_for(self, device_name: str) -> list[Package]:
        """The rows of this device set aside as stale."""
        return self.for_device(device_name, self.stale)


def merged(catalogs: list[Catalog]) -> Catalog:
    """Several catalogs read as one (`gpucost report --catalog A --catalog B`): one currency for the comparison, and a
    row listed in two of them is refused rather than counted twice."""
    first = catalogs[0]
    if len(catalogs) == 1:
        return first
    seen: dict[tuple, str] = {}
    for catalog in catalogs:
        if catalog.currency != first.currency:
            raise GpucostError(f"{catalog.path} prices in {catalog.currency}, {first.path} in {first.currency}: one "
                               "comparison uses one currency")
        for p in catalog.packages:
            key = (p.provider, p.gpu, p.billing, p.days, p.instance, p.region, p.billed_as)
            if key in seen:
                raise GpucostError(f"{catalog.path}:{p.line}: {p.describe()} of {p.provider} is also in {seen[key]}")
            seen[key] = f"{catalog.path}:{p.line}"
    return Catalog(", ".join(c.path for c in catalogs), " + ".join(c.version for c in catalogs), first.currency,
                   tuple(p for c in catalogs for p in c.packages))


def dated(catalog: Catalog, today: dt.date, max_age_days: int | None, allow_stale: bool = False
          ) -> tuple[Catalog, list[str]]:
    """The catalog with its stale rows set aside (older than max_age_days, unless allow_stale), and a remark on
    every row: its age, undated, or stale (priced only because allowed)."""
    fresh, stale, remarks = [], [], []
    for package in catalog.packages:
        age = package.age_days(today)
        where = f"{package.describe()} at {package.kind.price(package)}"
        if max_age_days is not None and age is not None and age > max_age_days:
            if allow_stale:
                fresh.append(package)
                remarks.append(f"{where}: stale price ({age} days > max_price_age_days {max_age_days}), priced "
                               "anyway (--allow-stale-prices)")
            else:
                stale.append(package)
                remarks.append(f"{where}: stale price ({age} days > max_price_age_days {max_age_days}), not priced "
                               "(--allow-stale-prices prices it anyway)")
            continue
        fresh.append(package)
        remarks.append(f"{where}: {package.dated(today)}")
    return replace(catalog, packages=tuple(fresh), stale=tuple(stale)), remarks


def _price(path: Path, line: int, text: str) -> Decimal:
    value = number(path, line, "price_per_lot", text)
    if value < 0:
        raise GpucostError(f"{path}:{line}: price_per_lot '{text}' is negative")
    return value


def _billing(path: Path, line: int, values: dict) -> dict:
    """The row's billing kind and the fields it reads; a value in a column another kind reads is refused."""
    name = values.get("billing") or billing.DEFAULT
    if name not in billing.KINDS:
        raise GpucostError(f"{path}:{line}: billing '{name}' is not one of {', '.join(billing.KINDS)}")
    kind = billing.kind(name)
    for column in billing.columns():
        if values.get(column) and column not in kind.columns:
            raise GpucostError(f"{path}:{line}: {column} is for {billing.owner(column)} rows, this one is billed "
                               f"{name}")
    return {"billing": name, **kind.read(path, line, values)}


def as_of_date(path: Path, line: int, text: str) -> dt.date | None:
    """The row's as_of date (YYYY-MM-DD); None when the column is absent or empty (an undated price)."""
    if not text:
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise GpucostError(f"{path}:{line}: as_of '{text}' is not a date (YYYY-MM-DD)") from None


def version_date(version: str) -> dt.date | None:
    """The date a catalog version is named by ('2026-09-24', 'what-if-2026-12-03'); None when it names none."""
    found = re.search(r"(\d{4}-\d{2}-\d{2})", version)
    if found is None:
        return None
    try:
        return dt.date.fromisoformat(found.group(1))
    except ValueError:
        return None


def csv_rows(path: Path, columns: tuple[str, ...], what: str = "catalog file") -> csv.DictReader:
    """A price list's rows, its required columns checked; a missing file, bytes that are not UTF-8 or a missing
    column is a one-line error naming the file (and line 1)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GpucostError(f"{path}: {what} not found") from None
    except UnicodeDecodeError:
        raise GpucostError(f"{path}: not valid UTF-8") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in columns if c not in (reader.fieldnames or [])]
    if missing:
        raise GpucostError(f"{path}:1: missing column(s) {', '.join(missing)}")
    return reader


def load_catalog(path: Path) -> Catalog:
    """Read and validate a catalog CSV; the first problem is a one-line error naming file and line."""
    reader = csv_rows(path, COLUMNS)
    packages: list[Package] = []
    seen: dict[tuple, int] = {}
    for record in reader:
        line = reader.line_num
        values = {c: (record.get(c) or "").strip()
                  for c in COLUMNS + ("billing", *billing.columns()) + DATED_COLUMNS + OFFER_COLUMNS}
        billed = _billing(path, line, values)
        for column in COLUMNS:
            if column not in ("days", "device_names", "price_per_lot") and not values[column]:
                raise GpucostError(f"{path}:{line}: empty {column}")
        per_lot = billing.kind(billed["billing"]).per_lot
        if per_lot and not values["price_per_lot"]:
            raise GpucostError(f"{path}:{line}: empty price_per_lot")
        package = Package(
            provider=values["provider"],
            catalog_version=values["catalog_version"],
            gpu=values["gpu"],
            device_names=tuple(n.strip() for n in values["device_names"].split(";") if n.strip()),
            gpus_per_lot=whole(path, line, "gpus_per_lot", values["gpus_per_lot"]),
            price_per_lot=_price(path, line, values["price_per_lot"]) if per_lot else Decimal(0),
            currency=values["currency"].upper(),
            source=values["source"],
            line=line,
            as_of=as_of_date(path, line, values["as_of"]) or version_date(values["catalog_version"]),
            as_of_from_version=not values["as_of"] and version_date(values["catalog_version"]) is not None,
            instance=values["instance"],
            region=values["region"],
            **billed,
        )
        key = (package.provider, package.gpu, package.billing, package.days, package.instance, package.region,
               package.billed_as)
        if key in seen:
            raise GpucostError(f"{path}:{line}: duplicate package {package.gpu} {package.billed_as} of "
                               f"{package.provider} (first at line {seen[key]})")
        seen[key] = line
        if packages and package.currency != packages[0].currency:
            raise GpucostError(
                f"{path}:{line}: currency {package.currency} mixed with {packages[0].currency} (line "
                f"{packages[0].line}); one comparison uses one currency"
            )
        if packages and package.catalog_version != packages[0].catalog_version:
            raise GpucostError(f"{path}:{line}: catalog_version {package.catalog_version} differs from "
                               f"{packages[0].catalog_version}; one file, one snapshot")
        packages.append(package)
    if not packages:
        raise GpucostError(f"{path}: no packages")
    return Catalog(str(path), packages[0].catalog_version, packages[0].currency, tuple(packages))


def example_catalog(device_name: str, price_per_hour: Decimal, currency: str, min_hours: Decimal,
                    increment_hours: Decimal, date: str, shape: str = "") -> str:
    """A what-if catalog (CSV text) pricing one device by the hour; its source says "example price", its date is its
    as_of, and `shape` ('2 vCPU 23 GiB'), the machine one would order, is its instance."""
    if not device_name.strip() or ";" in device_name:
        raise GpucostError(f"cannot name device '{device_name}' in a catalog row")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS + HOURLY_COLUMNS + DATED_COLUMNS + ("instance",))
    source = (f"{EXAMPLE_PRICE} written by `gpucost catalog example` on {date}: not a quote; "
              "edit price_per_lot, min_hours and increment_hours to your own rate")
    writer.writerow(["this-machine", f"what-if-{date}", "this-machine", device_name.strip(), 1, "", price_per_hour,
                     currency.upper(), source, billing.HOURLY.name, min_hours, increment_hours, date, shape])
    return out.getvalue()
