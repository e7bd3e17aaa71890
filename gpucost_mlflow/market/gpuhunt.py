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
    """Offers of the named providers (default: every provider of the offline catalog directory, or gpuhunt's
    offline providers when online) and GPUs."""
    gpuhunt = require("gpuhunt", "gpuhunt")
    from gpuhunt._internal.catalog import OFFLINE_PROVIDERS, ONLINE_PROVIDERS

    folder = os.environ.get(CATALOG_DIR)
    known = OFFLINE_PROVIDERS + ONLINE_PROVIDERS
    unknown = [p for p in providers or [] if p.lower() not in known]
    if unknown:
        raise GpucostError(f"unknown provider(s) {', '.join(unknown)} for gpuhunt; known: {', '.join(sorted(known))}")
    catalog = gpuhunt.Catalog(balance_resources=False, auto_reload=False)
    if folder:
        present = sorted(p.stem for p in Path(folder).glob("*.csv") if p.stem in OFFLINE_PROVIDERS)
        providers = [p.lower() for p in providers] if providers else present
        missing = [p for p in providers if p not in present]
        if missing:
            raise GpucostError(f"{CATALOG_DIR}={folder} holds no catalog for {', '.join(missing)}")
        as_of = {p: dt.date.fromtimestamp((Path(folder) / f"{p}.csv").stat().st_mtime) for p in providers}
        dated_by = {p: f"the date of {p}.csv in {CATALOG_DIR}" for p in providers}
    else:
        providers = [p.lower() for p in providers] if providers else list(OFFLINE_PROVIDERS)
        try:
            catalog.load()
        except (OSError, gpuhunt.GPUHuntError) as exc:  # an unreachable bucket: urllib's error or gpuhunt's
            raise GpucostError(f"gpuhunt could not fetch its catalogs ({exc}); offline, set {CATALOG_DIR}") from None
        as_of = {p: dt.date.today() for p in providers}
        dated_by = {p: f"fetched by gpuhunt during this import (version {getattr(catalog.catalog.get(p), 'version', '?')})"
                    for p in providers}
    items = catalog.query(provider=providers, gpu_name=gpus or None, min_gpu_count=1)
    joined: dict[tuple[str, str, str], dict] = {}
    for item in items:
        key = (item.provider.lower(), item.instance_name, item.location)
        entry = joined.setdefault(key, {"item": item, "price": None, "spot": None})
        entry["spot" if item.spot else "price"] = Decimal(repr(float(item.price)))
    offers = [Offer(provider, instance, location, e["item"].gpu_name, int(e["item"].gpu_count),
                    float(e["item"].gpu_memory) if e["item"].gpu_memory is not None else None, e["price"], e["spot"])
              for (provider, instance, location), e in joined.items()]
    return Read(offers, as_of, dated_by, getattr(gpuhunt, "__version__", "") or _version())


def _version() -> str:
    from importlib.metadata import version

    return version("gpuhunt")
