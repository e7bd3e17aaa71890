"""The fleet's worst case, priced before any launch: per GPU type, the dearest offer SkyPilot could choose for it,
for the whole time the job may hold the machine.

A job holds its machine for setup (at most `setup_hours`, its own limit) and the campaign (at most `max_hours`, the
run's limit). On demand, that window is the worst case. On spot, every interruption SkyPilot recovers from starts the
job again on a fresh machine under the same two limits: the worst case counts the 90th percentile of the number of
interruptions (Poisson, at the user's expected rate, as the market's spot rows are planned: core/money/interruptions.py)
each as a whole further window. Money is Decimal, rounded up to the cent.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_UP, Decimal

from gpucost_mlflow.core.amounts import CENT
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.fleet.jobs import Job
from gpucost_mlflow.core.money.interruptions import rework
from gpucost_mlflow.core.money.market import Interruptions, Offer

CURRENCY = "USD"  # SkyPilot's catalogs price in US dollars


@dataclass(frozen=True)
class Worst:
    """One job's worst case: the offer it is priced at, its price per machine-hour, the hours and the cost."""

    job: Job
    offer: Offer
    price: Decimal
    hours: Decimal
    cost: Decimal
    basis: str

    def line(self) -> str:
        where = f"{self.offer.provider} {self.offer.instance} in {self.offer.region}"
        return (f"{self.job.accelerators}: at most {self.cost} {CURRENCY} ({self.hours.normalize():f} h x "
                f"{self.price} {CURRENCY}/h, the dearest offer SkyPilot may choose: {where}; {self.basis})")


def worst_case(job: Job, offers: list[Offer], *, max_hours: Decimal, setup_hours: Decimal, spot: bool,
               interruptions: Interruptions | None, clouds: str) -> Worst:
    """The job's worst case over the offers of its accelerator and count (`clouds`: where they were looked for,
    for the message when there are none)."""
    mine = [o for o in offers if o.accelerator.lower() == job.gpu.lower() and o.count == job.count]
    if not mine:
        raise GpucostError(f"no offer of {job.accelerators} in SkyPilot's catalog of {clouds}: unknown GPU name, or "
                           "not sold in that count there (`sky show-gpus` lists them); nothing launched")
    priced = [(o.spot_price if spot else o.price, o) for o in mine]
    priced = [(price, o) for price, o in priced if price is not None]
    if not priced:
        raise GpucostError(f"no {'spot' if spot else 'on-demand'} price for {job.accelerators} in SkyPilot's catalog "
                           f"of {clouds}: it cannot be priced, so it is not launched")
    price, offer = max(priced, key=lambda pair: (pair[0], pair[1].provider, pair[1].instance, pair[1].region))
    window = setup_hours + max_hours
    if not spot:
        hours, basis = window, f"setup {setup_hours:f} h + campaign {max_hours:f} h, the job's two limits"
    else:
        if interruptions is None:
            raise GpucostError("--spot needs --interruptions-per-day (your expectation for these offers): without it "
                               "a spot fleet's worst case cannot be priced; nothing launched")
        found = rework(float(max_hours), 0.0, float(interruptions.per_day), float(setup_hours), interruptions.source)
        hours = window * (found.p90_count + 1)
        basis = (f"spot: {found.p90_count + 1} windows of setup {setup_hours:f} h + campaign {max_hours:f} h, each "
                 f"recovery starting both limits again; P90 of {interruptions.per_day:f} interruptions a day "
                 f"({interruptions.source})")
    cost = (price * hours).quantize(CENT, rounding=ROUND_UP)
    return Worst(job, offer, price, hours, cost, basis)


def total(worsts: list[Worst]) -> Decimal:
    return sum((w.cost for w in worsts), Decimal(0))


def check(worsts: list[Worst], max_cost: Decimal) -> None:
    """Refuse, in one line with the figure per GPU type, a fleet whose worst case exceeds --max-cost."""
    if total(worsts) > max_cost:
        each = "; ".join(f"{w.job.accelerators} {w.cost} {CURRENCY}" for w in worsts)
        raise GpucostError(f"the fleet's worst case {total(worsts)} {CURRENCY} exceeds --max-cost {max_cost} "
                           f"{CURRENCY} ({each}); nothing launched")
