"""AWS Spot Advisor's interruption-frequency bands (its `spot-advisor-data.json`) as interruptible rows' assumptions.

The file gives, per region and instance type, a band of the share of Spot capacity AWS reclaimed over the trailing
month (`<5%`, `5-10%`, ..., `>20%`); it carries no date, so the caller dates it. The plan commits at P90, so a row takes
its band's upper edge (the file's `max` for a band with none in its label), read as the probability p that an
instance is interrupted within a month of MONTH_DAYS days. With interruptions arriving as a Poisson process (as
core/money/interruptions.py counts them), p = 1 - exp(-30 x rate), so rate = -ln(1 - p) / 30 per day: 10 % a month
is 0.0035 a day. An upper edge of 100 % bounds no rate: such a row is left as it was, and said so. Pure.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
import re
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money import billing
from gpucost_mlflow.core.money.market import Interruptions, Offer

MONTH_DAYS = 30
SYSTEM = "Linux"  # the GPU catalogs price Linux instances
RATE_PLACES = Decimal("0.000001")
PROVIDER = "aws"
_LABEL = re.compile(r"^\s*(?:<\s*(?P<below>\d+(?:\.\d+)?)|(?P<low>\d+(?:\.\d+)?)\s*-\s*(?P<high>\d+(?:\.\d+)?)"
                    r"|>\s*(?P<above>\d+(?:\.\d+)?))\s*%\s*$")


@dataclass(frozen=True)
class Band:
    """One interruption-frequency band of the file: its label and its upper edge in percent a month (None: none)."""

    label: str
    upper_percent: Decimal | None


@dataclass(frozen=True)
class Advice:
    """What the advisor says of one instance type in one region: its band and the P90 rate a day, or why none."""

    band: Band
    per_day: Decimal | None
    source: str
    why_not: str = ""


@dataclass(frozen=True)
class SpotAdvisor:
    """The file's bands per (region, instance type), dated by the caller."""

    as_of: dt.date
    bands: dict[tuple[str, str], Band]

    @property
    def source(self) -> str:
        return f"AWS Spot Advisor {self.as_of.isoformat()}"

    def advice(self, instance: str, region: str) -> Advice | None:
        """The band of this instance type in this region and its P90 rate; None when the file does not cover it."""
        band = self.bands.get((region, instance))
        if band is None:
            return None
        if band.upper_percent is None:
            return Advice(band, None, self.source, f"band {band.label} has no upper edge in the file (no `max`): "
                                                   "a rate would be a guess")
        per_day = per_day_from_monthly(band.upper_percent)
        if per_day is None:
            return Advice(band, None, self.source, f"band {band.label} reaches {band.upper_percent:g} % a month in the "
                                                   "file: no finite rate bounds it")
        return Advice(band, per_day,
                      f"{self.source} ({SYSTEM}), {region} {instance} band {band.label}: P90 at its upper "
                                     f"edge, {band.upper_percent:g} % a month = {per_day} a day")


def per_day_from_monthly(percent: Decimal) -> Decimal | None:
    """Interruptions a day of a Poisson process that interrupts an instance within a month with this probability
    (rounded up to the micro-interruption); None at 100 % or more, which bounds no rate."""
    share = float(percent) / 100
    if share >= 1:
        return None
    rate = -math.log1p(-share) / MONTH_DAYS
    return Decimal(repr(rate)).quantize(RATE_PLACES, rounding=ROUND_CEILING)


def _refuse(path: Path, what: str) -> GpucostError:
    return GpucostError(f"{path}: {what}: not AWS Spot Advisor's spot-advisor-data.json as published (download it "
                        "again, docs/catalogs.md); nothing written")


def _band(path: Path, entry: object) -> tuple[int, Band]:
    if not isinstance(entry, dict) or type(entry.get("index")) is not int or not isinstance(entry.get("label"), str):
        raise _refuse(path, f"a range without an integer index and a label ({str(entry)[:80]})")
    found = _LABEL.match(entry["label"])
    if found is None:
        raise _refuse(path, f"range label '{entry['label']}' is not '<N%', 'N-M%' or '>N%'")
    top = found.group("below") or found.group("high")
    ceiling = entry.get("max")
    if top is None and ceiling is not None:
        if isinstance(ceiling, bool) or not isinstance(ceiling, (int, float)) or ceiling <= 0:
            raise _refuse(path, f"range '{entry['label']}' has a max that is not a positive number ({ceiling!r})")
        top = repr(ceiling)
    return entry["index"], Band(entry["label"].strip(), Decimal(top) if top is not None else None)


def parse(path: Path, text: str, as_of: dt.date | None) -> SpotAdvisor:
    """The bands of the file's Linux entries; a file that is not complete, not in the published shape or undated is
    a one-line error."""
    if as_of is None:
        raise GpucostError(f"{path}: AWS Spot Advisor's file carries no date: give --as-of YYYY-MM-DD, the day it was "
                           "downloaded (docs/catalogs.md); nothing written")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _refuse(path, f"not complete JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    if not isinstance(data, dict):
        raise _refuse(path, "not a JSON object")
    missing = [key for key in ("ranges", "spot_advisor") if key not in data]
    if missing:
        raise _refuse(path, f"no {' and no '.join(repr(k) for k in missing)}")
    if not isinstance(data["ranges"], list) or not data["ranges"]:
        raise _refuse(path, "'ranges' is not a list of bands")
    ranges = dict(_band(path, entry) for entry in data["ranges"])
    regions = data["spot_advisor"]
    if not isinstance(regions, dict):
        raise _refuse(path, "'spot_advisor' is not an object of regions")
    bands: dict[tuple[str, str], Band] = {}
    for region, systems in regions.items():
        if not isinstance(systems, dict):
            raise _refuse(path, f"region {region} is not an object of operating systems")
        instances = systems.get(SYSTEM, {})
        if not isinstance(instances, dict):
            raise _refuse(path, f"{region} {SYSTEM} is not an object of instance types")
        for instance, entry in instances.items():
            index = entry.get("r") if isinstance(entry, dict) else None
            if type(index) is not int or index not in ranges:
                raise _refuse(path, f"{region} {instance}: its range 'r' ({index!r}) is not one of the file's ranges")
            bands[(region, instance)] = ranges[index]
    if not bands:
        raise _refuse(path, f"no {SYSTEM} instance type in any region")
    return SpotAdvisor(as_of, bands)


def read(path: Path, as_of: dt.date | None) -> SpotAdvisor:
    """The file at path, parsed (a missing file or bytes that are not UTF-8 are one line)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GpucostError(f"{path}: cannot be read ({type(exc).__name__}); nothing written") from None
    return parse(path, text, as_of)


def assumptions(advisor: SpotAdvisor, offers: list[Offer], restart_hours: Decimal
                ) -> tuple[dict[tuple[str, str, str], Interruptions], list[str]]:
    """Each AWS spot offer's assumption from its band, keyed by (provider, instance, region) as
    market.catalog_text reads it, with the user's restart hours; and one line per band that bounds no rate."""
    advised: dict[tuple[str, str, str], Interruptions] = {}
    unbounded: dict[str, list[str]] = {}
    for offer in offers:
        if offer.spot_price is None or offer.provider.lower() != PROVIDER:
            continue
        found = advisor.advice(offer.instance, offer.region)
        if found is not None and found.per_day is not None:
            where = (PROVIDER, offer.instance, offer.region)
            advised[where] = Interruptions(found.per_day, restart_hours, found.source)
        elif found is not None:
            unbounded.setdefault(found.band.label, []).append(found.why_not)
    notes = [f"{len(whys)} AWS spot offer(s) in Spot Advisor band {label}: {whys[0]} (your own assumption, if given, "
             "prices them)" for label, whys in sorted(unbounded.items())]
    return advised, notes


@dataclass(frozen=True)
class Rewritten:
    """The catalog's text with its covered interruptible rows set, how many, and what was left and why."""

    text: str
    rows: int
    notes: list[str]


def rewrite(path: Path, text: str, advisor: SpotAdvisor) -> Rewritten:
    """Set interruptions_per_day and interruptions_source of every interruptible AWS row of the catalog CSV whose
    instance and region the advisor covers; every other cell is kept as read."""
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    needed = [c for c in ("provider", "billing", "instance", "region",
                          *billing.INTERRUPTIBLE.columns) if c not in header]
    if needed:
        raise GpucostError(f"{path}:1: no {', '.join(needed)} column: the catalog holds no interruptible row the Spot "
                           "Advisor could date (docs/catalogs.md); nothing written")
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    rows = not_aws = not_covered = 0
    notes: list[str] = []
    for record in reader:
        values = {k: (v or "").strip() for k, v in record.items() if k}
        if values["billing"] == billing.INTERRUPTIBLE.name:
            if values["provider"].lower() != PROVIDER:
                not_aws += 1
            else:
                found = advisor.advice(values["instance"], values["region"])
                if found is None:
                    not_covered += 1
                elif found.per_day is None:
                    notes.append(f"{path}:{reader.line_num}: {values['instance']} in {values['region']} left as it "
                                 f"was: {found.why_not}")
                else:
                    record = {**record, "interruptions_per_day": str(found.per_day),
                              "interruptions_source": found.source}
                    rows += 1
        writer.writerow({k: v for k, v in record.items() if k})
    if not_covered:
        notes.append(f"{not_covered} interruptible AWS row(s) left as they were: their instance and region are not "
                     f"in the file's {SYSTEM} entries")
    if not_aws:
        notes.append(f"{not_aws} interruptible row(s) of other providers left as they were (the Spot Advisor is AWS's)")
    return Rewritten(out.getvalue(), rows, notes)
