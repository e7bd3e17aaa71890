"""A campaign session's machine time as it runs (each pass's wall, its timed parts), and its price where the campaign
was given a catalog: the device its passes ran on here and the GPUs they held, priced by
core/money/measuring_price.py."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from gpucost_mlflow.core.campaign.measuring import Measuring, session
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.variants import Declaration
from gpucost_mlflow.core.money.catalog import Catalog
from gpucost_mlflow.core.money.measuring_price import Price, at_offers
from gpucost_mlflow.execution import devices, models


@dataclass
class Clock:
    """One session's clock: when it began and each pass's wall, from its launch to its record."""

    began: float = field(default_factory=time.time)
    walls: list[float] = field(default_factory=list)

    def timed(self, run, *args):
        """run(*args), its wall added to the passes'."""
        start = time.time()
        try:
            return run(*args)
        finally:
            self.walls.append(time.time() - start)

    def session(self, metrics: list[dict]) -> Measuring:
        """The session so far: its wall, its passes' walls and their timed parts (`metrics`: each pass's)."""
        return session(time.time() - self.began, self.walls, metrics)


def priced(measuring: Measuring, catalog: Catalog | None, declared: Declaration, variants: list[str]) -> Price | None:
    """The campaign's machine time at the cheapest by-the-hour row of the device its variants run on here (None
    without a catalog): a GPU variant's lanes are the GPUs the machine holds, a CPU's share one machine."""
    if catalog is None:
        return None
    names: list[str] = []
    gpus = 1
    for name in variants:
        try:
            device = models.resolve_device(declared.variant(name).settings.device)
        except GpucostError:
            continue
        names += [n for n in devices.device_names(device) if n not in names]
        if device.type != "cpu":
            gpus = max(gpus, declared.variant(name).settings.lanes)
    rows = [row for name in names for row in catalog.for_device(name)]
    return at_offers(list(dict.fromkeys(rows)), measuring.hours, gpus, " or ".join(names), catalog.currency)
