"""The fleet's worst case, priced before any launch: per GPU type, the dearest offer SkyPilot could choose for it,
for the whole time the job may hold the machine.

A job holds its machine for setup (at most `setup_hours`, its own limit) and the campaign (at most `max_hours`, the
run's limit). On demand, that window is the worst case. On spot, every interruption SkyPilot recovers from starts the
job again on a fresh machine under the same two limits: the worst case counts the 90th percentile of the number of
interruptions (Poisson, at the user's expected rate, as the market's spot rows are planned: core/money/interruptions.py)
each as a whole further window. Money is Decimal, rounded up to the cent.

Beside it, where the protocol declares a race (`race: {from_round: N}`), the worst case with the race: the campaign
runs the race's fewest passes (core/campaign/race.py `worst_case_passes`: every configuration but the best stops at
round N, the best runs all its passes), its hours scaled by that share of the full design's passes, passes assumed
alike in duration. The job's limit stays --max-hours and --max-cost is checked against the worst case without it:
the race stops only what the measurements allow.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_UP, Decimal

from gpucost_mlflow.core.amounts import CENT
from gpucost_mlflow.core.campaign.race import worst_case_passes
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
    setup_hours: Decimal = Decimal(0)
    campaign_hours: Decimal = Decimal(0)
    windows: int = 1  # on spot, one more window of setup and campaign per interruption counted

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
    windows = 1
    if not spot:
        hours, basis = window, f"setup {setup_hours:f} h + campaign {max_hours:f} h, the job's two limits"
    else:
        if interruptions is None:
            raise GpucostError("--spot needs --interruptions-per-day (your expectation for these offers): without it "
                               "a spot fleet's worst case cannot be priced; nothing launched")
        found = rework(float(max_hours), 0.0, float(interruptions.per_day), float(setup_hours), interruptions.source)
        windows = found.p90_count + 1
        hours = window * windows
        basis = (f"spot: {found.p90_count + 1} windows of setup {setup_hours:f} h + campaign {max_hours:f} h, each "
                 f"recovery starting both limits again; P90 of {interruptions.per_day:f} interruptions a day "
                 f"({interruptions.source})")
    cost = (price * hours).quantize(CENT, rounding=ROUND_UP)
    return Worst(job, offer, price, hours, cost, basis, setup_hours, max_hours, windows)


def total(worsts: list[Worst]) -> Decimal:
    return sum((w.cost for w in worsts), Decimal(0))


def check(worsts: list[Worst], max_cost: Decimal) -> None:
    """Refuse, in one line with the figure per GPU type, a fleet whose worst case exceeds --max-cost."""
    if total(worsts) > max_cost:
        each = "; ".join(f"{w.job.accelerators} {w.cost} {CURRENCY}" for w in worsts)
        raise GpucostError(f"the fleet's worst case {total(worsts)} {CURRENCY} exceeds --max-cost {max_cost} "
                           f"{CURRENCY} ({each}); nothing launched")


@dataclass(frozen=True)
class Design:
    """What a job's campaign runs: its configurations, the passes each, and the race's first look (None: no race)."""

    configs: int
    passes: int
    from_round: int | None


@dataclass(frozen=True)
class Raced:
    """A job's worst case with the race: the race's fewest passes of the full design's, the campaign's hours scaled by
    that share, at the same offer and price as the worst case without it."""

    worst: Worst
    design: Design
    passes: int
    hours: Decimal
    cost: Decimal

    def line(self) -> str:
        d, w = self.design, self.worst
        full = d.configs * d.passes
        if self.passes >= full:
            whose = f"{d.configs} configurations'" if d.configs > 1 else "1 configuration's"
            return (f"{w.job.accelerators} with the race (from round {d.from_round}): the same {w.cost} {CURRENCY}, "
                    f"the race stops none of {whose} {full} passes (the best runs all its passes)")
        windows = f"{w.windows} x (" if w.windows > 1 else ""
        return (f"{w.job.accelerators} with the race (from round {d.from_round}): at most {self.cost} {CURRENCY} "
                f"({self.hours.normalize():f} h x {w.price} {CURRENCY}/h: {windows}setup {w.setup_hours:f} h + "
                f"campaign {w.campaign_hours:f} h x {self.passes}/{full} passes{')' if windows else ''}; every "
                f"configuration but the best stops at round {d.from_round}, the best runs its {d.passes}, passes alike "
                "in duration)")


HOUR_STEP = Decimal("0.0001")  # the race's scaled hours, rounded up: never below the share


def with_race(worst: Worst, design: Design) -> Raced | None:
    """The job's worst case with the protocol's race (None when it declares none): every window's campaign part
    scaled by the race's fewest passes over the full design's."""
    if design.from_round is None or design.configs <= 0 or design.passes <= 0:
        return None
    fewest = worst_case_passes(design.configs, design.passes, design.from_round)
    campaign = (worst.campaign_hours * fewest / (design.configs * design.passes)).quantize(HOUR_STEP, rounding=ROUND_UP)
    hours = (worst.setup_hours + campaign) * worst.windows
    return Raced(worst, design, fewest, hours, (worst.price * hours).quantize(CENT, rounding=ROUND_UP))


def raced_total(worsts: list[Worst], raced: list[Raced]) -> Decimal:
    """The fleet's worst case with the race: each job's raced figure, or its worst case where it has none."""
    return sum((next((r.cost for r in raced if r.worst is w), w.cost) for w in worsts), Decimal(0))


def totals_line(worsts: list[Worst], raced: list[Raced]) -> str:
    """'fleet worst case with the race: 2.52 USD (without it: 3.15 USD; --max-cost is checked without it)', '' when
    the protocol declares no race."""
    if not raced:
        return ""
    return (f"fleet worst case with the race: {raced_total(worsts, raced)} {CURRENCY} (without it: {total(worsts)} "
            f"{CURRENCY}; --max-cost is checked without it, as the race stops only what the measurements allow)")
