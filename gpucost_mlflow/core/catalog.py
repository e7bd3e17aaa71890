"""Package catalogs: versioned CSV price lists, every row validated, money as Decimal."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError

COLUMNS = ("provider", "catalog_version", "gpu", "device_names", "gpus_per_lot", "days", "price_per_lot", "currency", "source")
DEFAULT_CATALOG = Path("catalog/labkit-2026-09-24.csv")
PACKAGE_DAYS = (3, 7, 30)


@dataclass(frozen=True)
class Package:
    """One rental package: a lot of gpus_per_lot GPUs for `days` days at price_per_lot."""

    provider: str
    catalog_version: str
    gpu: str
    device_names: tuple[str, ...]
    gpus_per_lot: int
    days: int
    price_per_lot: Decimal
    currency: str
    source: str
    line: int


@dataclass(frozen=True)
class Catalog:
    path: str
    version: str
    currency: str
    packages: tuple[Package, ...]

    def gpus(self) -> list[str]:
        return sorted({p.gpu for p in self.packages})

    def find(self, gpu: str, days: int) -> Package | None:
        """The package for this GPU and length, or None when the catalog has no such row."""
        for package in self.packages:
            if package.gpu == gpu and package.days == days:
                return package
        return None

    def require_gpu(self, gpu: str) -> None:
        if gpu not in self.gpus():
            raise GpucostError(f"GPU '{gpu}' is not in catalog {self.version} ({self.path}); known: {', '.join(self.gpus())}")

    def for_device(self, device_name: str) -> list[Package]:
        """Packages whose GPU the driver reports under this name (case-insensitive exact match)."""
        wanted = device_name.strip().lower()
        return [p for p in self.packages if wanted in (name.lower() for name in p.device_names)]


def _whole(path: Path, line: int, column: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise GpucostError(f"{path}:{line}: {column} '{text}' is not a positive whole number") from None
    if value < 1:
        raise GpucostError(f"{path}:{line}: {column} '{text}' is not a positive whole number")
    return value


def _price(path: Path, line: int, text: str) -> Decimal:
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise GpucostError(f"{path}:{line}: price_per_lot '{text}' is not a number") from None
    if not value.is_finite():
        raise GpucostError(f"{path}:{line}: price_per_lot '{text}' is not a number")
    if value < 0:
        raise GpucostError(f"{path}:{line}: price_per_lot '{text}' is negative")
    return value


def load_catalog(path: Path) -> Catalog:
    """Read and validate a catalog CSV; the first problem is a one-line error naming file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GpucostError(f"{path}: catalog file not found") from None
    except UnicodeDecodeError:
        raise GpucostError(f"{path}: not valid UTF-8") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise GpucostError(f"{path}:1: missing column(s) {', '.join(missing)}")
    packages: list[Package] = []
    seen: dict[tuple, int] = {}
    for record in reader:
        line = reader.line_num
        for column in COLUMNS:
            if not (record.get(column) or "").strip():
                raise GpucostError(f"{path}:{line}: empty {column}")
        values = {c: record[c].strip() for c in COLUMNS}
        package = Package(
            provider=values["provider"],
            catalog_version=values["catalog_version"],
            gpu=values["gpu"],
            device_names=tuple(n.strip() for n in values["device_names"].split(";") if n.strip()),
            gpus_per_lot=_whole(path, line, "gpus_per_lot", values["gpus_per_lot"]),
            days=_whole(path, line, "days", values["days"]),
            price_per_lot=_price(path, line, values["price_per_lot"]),
            currency=values["currency"].upper(),
            source=values["source"],
            line=line,
        )
        key = (package.provider, package.gpu, package.days)
        if key in seen:
            raise GpucostError(f"{path}:{line}: duplicate package {package.gpu} {package.days} days of {package.provider} (first at line {seen[key]})")
        seen[key] = line
        if packages and package.currency != packages[0].currency:
            raise GpucostError(
                f"{path}:{line}: currency {package.currency} mixed with {packages[0].currency} (line {packages[0].line}); one comparison uses one currency"
            )
        if packages and package.catalog_version != packages[0].catalog_version:
            raise GpucostError(f"{path}:{line}: catalog_version {package.catalog_version} differs from {packages[0].catalog_version}; one file, one snapshot")
        packages.append(package)
    if not packages:
        raise GpucostError(f"{path}: no packages")
    return Catalog(str(path), packages[0].catalog_version, packages[0].currency, tuple(packages))
