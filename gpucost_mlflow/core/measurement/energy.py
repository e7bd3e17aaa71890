"""Energy of a measured pass from a cumulative counter read just before and just after its clock (pure arithmetic).

A board or package counter only moves when its firmware updates it, so a pass shorter than one update
period reads nothing honest (absent, with the reason) and a pass of a few periods is flagged: each of the
two reads can be stale by up to one period.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# Run tags a pass's child sets (the launcher copies the outcome's "tags"): which counter energy_j came
# from, the flag of a pass too short for it, and the measured device's UUID as its driver reports it.
ENERGY_COUNTER_TAG = "gpucost.energy_counter"
ENERGY_FLAG_TAG = "gpucost.energy_flag"
DEVICE_UUID_TAG = "gpucost.device_uuid"
ENERGY_METRIC = "energy_j"
# Flag a pass whose two possibly stale reads could be off by more than this share of its energy.
MAX_STALE_SHARE = 0.10


@dataclass(frozen=True)
class CounterSpec:
    """A cumulative energy counter: its name, the joules one count is worth, where it wraps, how often it moves."""

    name: str
    joules_per_count: float
    wraps_at: int | None
    update_period_s: float
    period_source: str

    def describe(self) -> str:
        """One line for the run's tag: the counter, its unit and its assumed update period with the source."""
        wrap = f", wraps at {self.wraps_at} counts" if self.wraps_at else ""
        return (f"{self.name}; 1 count = {self.joules_per_count:g} J{wrap}; "
                f"updates about every {self.update_period_s:g} s ({self.period_source})")


@dataclass(frozen=True)
class PassEnergy:
    """energy_j of one pass, or None with the reason; `flag` says why a present value is coarse."""

    energy_j: float | None
    reason: str = ""
    flag: str = ""


def advanced(before: int, after: int, wraps_at: int | None) -> int | None:
    """Counts between two reads of a cumulative counter that wrapped at most once; None when it went back
    without a known wrap (a driver reload resets NVML's counter)."""
    if after >= before:
        return after - before
    if wraps_at:
        return after + wraps_at - before
    return None


def stale_share(pass_s: float, update_period_s: float) -> float:
    """Worst share of the pass's energy the two reads can miss: each may lag its instant by one update period."""
    return 2 * update_period_s / pass_s


def pass_energy(spec: CounterSpec, before: int, after: int, pass_s: float) -> PassEnergy:
    """energy_j between the two reads around the clock; absent when the pass is shorter than one update
    period or the counter did not move forward, flagged when the stale reads could exceed MAX_STALE_SHARE."""
    if pass_s < spec.update_period_s:
        return PassEnergy(None, f"pass of {pass_s:.3f} s is shorter than the {spec.name} update period "
                                f"(about {spec.update_period_s:g} s): the counter cannot resolve it")
    counts = advanced(before, after, spec.wraps_at)
    if counts is None:
        return PassEnergy(None, f"the {spec.name} went back during the pass ({before} -> {after}): counter reset")
    if counts == 0:
        return PassEnergy(None, f"the {spec.name} did not advance during a {pass_s:.3f} s pass")
    share = stale_share(pass_s, spec.update_period_s)
    flag = ""
    if share > MAX_STALE_SHARE:
        flag = (f"pass of {pass_s:.3f} s spans about {pass_s / spec.update_period_s:.0f} updates of the {spec.name}: "
                f"energy_j may be off by up to {100 * share:.0f} %")
    return PassEnergy(counts * spec.joules_per_count, "", flag)


def joules_per_validated_corpus(accepted_energies: Sequence[float | None]) -> tuple[float | None, str]:
    """Median energy_j of a configuration's accepted passes (each processed one validated corpus), with the
    reason when there is none: no accepted pass, or none of them had a counter."""
    if not accepted_energies:
        return None, "no accepted pass"
    measured = [value for value in accepted_energies if value is not None]
    if not measured:
        return None, "no energy counter on any accepted pass"
    return statistics.median(measured), ""


def idle_power(spec: CounterSpec, before: int, after: int, idle_s: float) -> tuple[float | None, str]:
    """The board's idle power (watts) from two counter reads around a wait, or None with the reason: a wait shorter
    than a few counter updates, or a counter that went back."""
    if idle_s < 10 * spec.update_period_s:
        return None, (f"cooldown of {idle_s:.3f} s spans fewer than 10 updates of the {spec.name}: "
                      "idle power not resolved")
    counts = advanced(before, after, spec.wraps_at)
    if counts is None:
        return None, f"the {spec.name} went back during the cooldown ({before} -> {after}): counter reset"
    return counts * spec.joules_per_count / idle_s, ""


def net_of_idle(energy_j: float | None, idle_w: float | None, pass_s: float | None) -> float | None:
    """A pass's energy less what the board would have drawn idle over its pass_s (None when either is unknown)."""
    if energy_j is None or idle_w is None or pass_s is None:
        return None
    return energy_j - idle_w * pass_s
