"""What a fleet's job really rented: every attempt SkyPilot ran it on (the first launch and each relaunch after a
preemption), setup included, billed by its provider's terms at the price of the offer it was launched on.

SkyPilot's managed-job queue keeps, per job, the recoveries so far (`recovery_count`), the run time of every attempt
together (`job_duration`: setup included, provisioning and recovery excluded) and when the last attempt started
(`last_recovered_at`) and ended (`end_at`). It keeps no single earlier attempt's length: those are billed on their
total, each at least the provider's minimum, which never bills more than the provider does per attempt. Pure: plain
numbers in, Decimal out, rounded up to the cent as the worst case is (core/fleet/budget.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_HALF_UP, ROUND_UP, Decimal

from gpucost_mlflow.core.amounts import CENT
from gpucost_mlflow.core.money.market import SECONDS_PER_HOUR, Terms

MILLISECOND = Decimal("0.001")  # the terms' seconds, back from the hours they are held in
# SkyPilot's managed-job states in which the job holds no machine any more: its rental is final.
ENDED = frozenset({"SUCCEEDED", "CANCELLED", "FAILED", "FAILED_SETUP", "FAILED_PRECHECKS", "FAILED_NO_RESOURCE",
                   "FAILED_CONTROLLER"})


@dataclass(frozen=True)
class Attempts:
    """A job's attempts as SkyPilot's queue tells them: `earlier` attempts ended by a preemption, `earlier_s` their
    run seconds together, and the last attempt's seconds (None while SkyPilot relaunches it); `ongoing` when the job
    still holds or seeks a machine, so its figures are so far."""

    earlier: int
    earlier_s: Decimal
    last_s: Decimal | None
    ongoing: bool

    @property
    def count(self) -> int:
        return self.earlier + (self.last_s is not None)

    @property
    def used_s(self) -> Decimal:
        return self.earlier_s + (self.last_s or 0)


def from_queue(status: str, recovery_count: int, job_duration: float | None, last_recovered_at: float | None,
               end_at: float | None, now: float) -> Attempts | None:
    """The attempts of one queue record (SkyPilot's `job_duration` there is every attempt's run time together; while
    RECOVERING, that of the attempts already lost); None when the job has not started on a machine yet."""
    if job_duration is None:
        return None
    total = Decimal(str(job_duration))
    ongoing = status not in ENDED
    if status == "RECOVERING":  # the lost attempt is counted only once the relaunch is up
        return Attempts(recovery_count + 1, total, None, True)
    if not last_recovered_at or last_recovered_at <= 0:
        return None
    last = Decimal(str(max(0.0, (end_at or now) - last_recovered_at)))
    last = min(last, total)
    return Attempts(recovery_count, total - last, last, ongoing)


@dataclass(frozen=True)
class Realized:
    """A job's realized rental: its attempts, the seconds billed, the price per hour, the cost and how it was billed."""

    attempts: Attempts
    billed_s: Decimal
    price: Decimal
    cost: Decimal
    terms: str
    currency: str = "USD"

    @property
    def partial(self) -> bool:
        return self.attempts.ongoing

    def line(self) -> str:
        """'0.06 USD: 3 attempts (2 recoveries), setup included, 124 s used, 180 s billed (...) at 1.006 USD/h'."""
        n = self.attempts.count
        so_far = " so far (partial: the job is still running)" if self.partial else ""
        return (f"{self.cost} {self.currency}{so_far}: {n} attempt{'s' if n != 1 else ''} "
                f"({self.attempts.earlier} recover{'ies' if self.attempts.earlier != 1 else 'y'}), setup included, "
                f"{self.attempts.used_s:.0f} s used, {self.billed_s:.0f} s billed ({self.terms}) at {self.price} "
                f"{self.currency}/h")


def billed_seconds(seconds: Decimal, attempts: int, terms: Terms | None) -> Decimal:
    """The seconds a provider bills for `attempts` machines that ran `seconds` together: each at least the minimum,
    the time rounded up to the increment; without terms, the seconds as run."""
    if terms is None or attempts == 0:
        return seconds
    increment, minimum = _seconds(terms.increment_hours), _seconds(terms.min_hours)
    rounded = (seconds / increment).to_integral_value(rounding=ROUND_CEILING) * increment
    return max(minimum * attempts, rounded)


def realized(attempts: Attempts, price: Decimal, terms: Terms | None, provider: str) -> Realized:
    """The rental of every attempt at the offer's price per hour: the earlier attempts billed on their total (the queue
    keeps no single one's length), the last one on its own."""
    billed = billed_seconds(attempts.earlier_s, attempts.earlier, terms)
    if attempts.last_s is not None:
        billed += billed_seconds(attempts.last_s, 1, terms)
    cost = (billed / SECONDS_PER_HOUR * price).quantize(CENT, rounding=ROUND_UP)
    said = (f"{provider}: min {_seconds(terms.min_hours).normalize():f} s, per "
            f"{_seconds(terms.increment_hours).normalize():f} s each attempt" if terms
            else f"no billing terms for {provider}: the seconds as run")
    return Realized(attempts, billed, price, cost, said)


def _seconds(hours: Decimal) -> Decimal:
    return (hours * SECONDS_PER_HOUR).quantize(MILLISECOND, rounding=ROUND_HALF_UP)


def total(found: list[Realized]) -> Decimal:
    """The fleet's realized cost over the jobs that have one."""
    return sum((r.cost for r in found), Decimal(0))
