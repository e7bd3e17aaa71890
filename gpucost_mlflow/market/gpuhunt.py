"""gpuhunt's catalog (dstack) through gpuhunt's API (`gpuhunt.Catalog.query`): one offer per (provider, instance,
location), its on-demand and spot items joined. Offline, gpuhunt reads `<provider>.csv` from `GPUHUNT_CATALOG_DIR`
(dated by the file); online, `Catalog.load()` fetches each provider's latest published catalog (dated today, its
version named)."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.money.market import Offer
from gpucost_mlflow.market import require

CATALOG_DIR = "GPUHUNT_CATALOG_DIR"


@dataclass(frozen=True)
class Read:
    offers: list[Offer]
    as_of: dict[str, dt.date]
    dated_by: dict[str, str]
    version: str


def read(providers: list[str] | None, gpus: list[str] | None) -> Read:
    """Offers of the named providers (default: every provider of the offline catalog directory, or every catalog
    gpuhunt fetched when online) and GPUs, through gpuhunt's public API only (`gpuhunt.Catalog`)."""
    gpuhunt = require("gpuhunt", "gpuhunt")
    folder = os.environ.get(CATALOG_DIR)
    catalog = gpuhunt.Catalog(balance_resources=False, auto_reload=False)
    named = [p.lower() for p in providers or []]
    if folder:
        present = sorted(p.stem for p in Path(folder).glob("*.csv"))
        wanted = named or present
    else:
        try:
            catalog.load()
        except (OSError, gpuhunt.GPUHuntError) as exc:  # an unreachable bucket: urllib's error or gpuhunt's
            raise GpucostError(f"gpuhunt could not fetch its catalogs ({exc}); offline, set {CATALOG_DIR}") from None
        present = sorted(catalog.catalog)
        wanted = named or present
    items: dict[str, list] = {}
    unknown: dict[str, str] = {}
    missing: list[str] = []
    for provider in wanted:
        try:
            found = catalog.query(provider=[provider], gpu_name=gpus or None, min_gpu_count=1)
        except ValueError as exc:  # gpuhunt's refusal of a provider it does not know (or an online one not added)
            unknown[provider] = str(exc)
            continue
        except OSError:  # offline: a provider gpuhunt knows, without its file in the folder
            missing.append(provider)
            continue
        if provider in present:
            items[provider] = found
        else:
            missing.append(provider)
    named_unknown = [p for p in named if p in unknown]  # a file of another name in the folder is not a catalog
    if named_unknown:
        raise GpucostError(f"unknown provider(s) {', '.join(named_unknown)} for gpuhunt {_version()} "
                           f"({'; '.join(unknown[p] for p in named_unknown)})")
    if missing:
        where = f"{CATALOG_DIR}={folder} holds" if folder else "gpuhunt fetched"
        raise GpucostError(f"{where} no catalog for {', '.join(missing)}")
    read_from = list(items)
    if not read_from:
        raise GpucostError(f"no gpuhunt catalog {'in ' + CATALOG_DIR + '=' + folder if folder else 'was fetched'}: "
                           "nothing written")
    if folder:
        as_of = {p: dt.date.fromtimestamp((Path(folder) / f"{p}.csv").stat().st_mtime) for p in read_from}
        dated_by = {p: f"the date of {p}.csv in {CATALOG_DIR}" for p in read_from}
    else:
        as_of = {p: dt.date.today() for p in read_from}
        dated_by = {p: "fetched by gpuhunt during this import (version "
                       f"{getattr(catalog.catalog.get(p), 'version', '?')})"
                    for p in read_from}
    joined: dict[tuple[str, str, str], dict] = {}
    for item in (item for p in read_from for item in items[p]):
        key = (item.provider.lower(), item.instance_name, item.location)
        entry = joined.setdefault(key, {"item": item, "price": None, "spot": None})
        entry["spot" if item.spot else "price"] = Decimal(repr(float(item.price)))
    offers = [Offer(provider, instance, location, e["item"].gpu_name, int(e["item"].gpu_count),
                    float(e["item"].gpu_memory) if e["item"].gpu_memory is not None else None, e["price"], e["spot"])
              for (provider, instance, location), e in joined.items()]
    return Read(offers, as_of, dated_by, _version())


def _version() -> str:
    from importlib.metadata import version

    return version("gpuhunt")
