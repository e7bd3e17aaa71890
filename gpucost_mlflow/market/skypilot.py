"""SkyPilot's catalog through SkyPilot's API (`sky.catalog.list_accelerators`): one offer per (cloud, instance type,
region), at the cheapest zone's price as SkyPilot gives it. SkyPilot reads its cached `vms.csv` under
`~/.sky/catalogs/<schema>/<cloud>/` and refreshes it itself when it can; the date of a price is the date SkyPilot
last downloaded that file (its `.meta` checksum file, written only on a download), else the file's own date."""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import os
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money.market import Offer
from gpucost_mlflow.market import require


@dataclass(frozen=True)
class Read:
    offers: list[Offer]
    as_of: dict[str, dt.date]  # per cloud, the date of the catalog file read
    dated_by: dict[str, str]  # per cloud, what gave that date
    schema: str
    version: str


def _catalog_dir(constants) -> Path:
    return Path(os.path.expanduser(constants.CATALOG_DIR)) / constants.CATALOG_SCHEMA_VERSION


def _date(folder: Path, cloud: str) -> tuple[dt.date, str, str] | None:
    """When SkyPilot downloaded the cloud's vms.csv (its checksum file, if it still matches), else the file's date;
    with the file's checksum."""
    path = folder / cloud / "vms.csv"
    if not path.is_file():
        return None
    digest = hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()
    meta = folder / ".meta" / cloud / "vms.csv.md5"
    if meta.is_file() and meta.read_text(encoding="utf-8").strip() == digest:
        return dt.date.fromtimestamp(meta.stat().st_mtime), "the day SkyPilot downloaded it", digest
    return dt.date.fromtimestamp(path.stat().st_mtime), "the file's own date (not a SkyPilot download)", digest


def _money(value) -> Decimal | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return Decimal(repr(float(value)))


def read(clouds: list[str] | None, gpus: list[str] | None, regions: list[str] | None) -> Read:
    """Offers of the named clouds (default: every cloud whose catalog SkyPilot has cached here), GPUs and regions."""
    sky = require("sky", "skypilot")
    from sky import catalog as sky_catalog
    from sky.skylet import constants

    folder = _catalog_dir(constants)
    known = [c.lower() for c in constants.ALL_CLOUDS]
    clouds = [c.lower() for c in clouds or []]
    if clouds:
        unknown = [c for c in clouds if c.lower() not in known]
        if unknown:
            raise GpucostError(f"unknown cloud(s) {', '.join(unknown)} for SkyPilot {sky.__version__}; known: "
                               f"{', '.join(sorted(known))}")
    else:
        clouds = sorted(c for c in known if (folder / c / "vms.csv").is_file())
        if not clouds:
            raise GpucostError(f"SkyPilot has no cached catalog under {folder}: name the clouds (--clouds aws,gcp) "
                               "to let SkyPilot fetch theirs")
    before = {c: _date(folder, c) for c in clouds}
    try:
        found = sky_catalog.list_accelerators(
            gpus_only=True, clouds=clouds, all_regions=True, case_sensitive=False,
            name_filter=f"^(?:{'|'.join(re.escape(g) for g in gpus)})$" if gpus else None,
            region_filter=f"^(?:{'|'.join(re.escape(r) for r in regions)})$" if regions else None)
    except (OSError, ValueError) as exc:  # no cached file and no network (requests' errors are OSErrors)
        missing = [c for c in clouds if before[c] is None]
        raise GpucostError(f"SkyPilot could not read the catalog of {', '.join(missing) or ', '.join(clouds)} "
                           f"({type(exc).__name__}): offline, it needs its cached file under {folder}") from None
    offers = [Offer(info.cloud.lower(), info.instance_type, info.region, info.accelerator_name,
                    int(info.accelerator_count), None if info.device_memory is None or math.isnan(info.device_memory)
                    else float(info.device_memory), _money(info.price), _money(info.spot_price))
              for infos in found.values() for info in infos if info.instance_type]
    as_of, dated_by = {}, {}
    for cloud in clouds:
        after = _date(folder, cloud)
        if after is not None and (before[cloud] is None or before[cloud][2] != after[2]):
            as_of[cloud], dated_by[cloud] = dt.date.today(), "downloaded by SkyPilot during this import"
        elif before[cloud] is not None:
            as_of[cloud], dated_by[cloud] = before[cloud][0], before[cloud][1]
    return Read(offers, as_of, dated_by, constants.CATALOG_SCHEMA_VERSION, sky.__version__)
