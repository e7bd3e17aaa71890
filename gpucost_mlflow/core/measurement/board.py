"""The board's state around a measured part, judged: throttling, other processes on the device, and starvation.

The child reads the state just before the clock starts and just after it stops (execution/boards.py: NVML or amdsmi);
these rules turn the two reads into flags. Flags, never verdicts: a throttled, contended or starved pass keeps its
duration, and the report counts them beside the configuration ("throttled k of n"). Pure arithmetic.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from gpucost_mlflow.core.records import Record

# NVML's clocks event (throttle) reasons, nvmlClocksEventReason* bits. Idle, an application clock setting, sync
# boost and a display clock setting are the board's choice, not a slowdown the pass suffered.
NVML_REASONS = {
    0x1: "gpu idle", 0x2: "applications clocks setting", 0x4: "software power cap", 0x8: "hardware slowdown",
    0x10: "sync boost", 0x20: "software thermal slowdown", 0x40: "hardware thermal slowdown",
    0x80: "hardware power brake", 0x100: "display clock setting",
}
NVML_THROTTLING = 0x4 | 0x8 | 0x20 | 0x40 | 0x80


@dataclass(frozen=True)
class BoardState(Record):
    """One read of the board: clocks, temperature, power limit, the throttle reasons active, other processes."""

    sm_clock_mhz: float | None = None
    memory_clock_mhz: float | None = None
    temperature_c: float | None = None
    power_limit_w: float | None = None
    throttle_reasons: tuple[str, ...] = ()
    other_processes: tuple[str, ...] = ()  # "pid 4242 (2.0 GiB)": processes other than the pass's holding the device
    unavailable: dict = field(default_factory=dict)  # what could not be read, and why


def nvml_reasons(mask: int) -> tuple[str, ...]:
    """The slowdowns named by an NVML clocks-event-reasons mask (idle and setting bits left out)."""
    return tuple(name for bit, name in NVML_REASONS.items() if mask & bit and bit & NVML_THROTTLING)


def amdsmi_reasons(throttle_status) -> tuple[str, ...]:
    """amdsmi's gpu_metrics throttle status: any set bit is a slowdown (its bit names vary by ASIC)."""
    if isinstance(throttle_status, bool) or not isinstance(throttle_status, int) or throttle_status <= 0:
        return ()
    return (f"throttle status 0x{throttle_status:x}",)


def throttled(start: BoardState | None, end: BoardState | None) -> str:
    """'software power cap (at start, at end); hardware thermal slowdown (at end)', or '' when neither read had one."""
    seen: dict[str, list[str]] = {}
    for when, state in (("at start", start), ("at end", end)):
        for reason in (state.throttle_reasons if state else ()):
            seen.setdefault(reason, []).append(when)
    return "; ".join(f"{reason} ({', '.join(when)})" for reason, when in seen.items())


def other_processes(processes: Iterable[tuple[int, int | None]], own_pids: Iterable[int]) -> tuple[str, ...]:
    """The device's processes other than the pass's own: (pid, bytes held or None) as 'pid 4242 (2.0 GiB)'."""
    own = set(own_pids)
    found = []
    for pid, held in processes:
        if pid in own:
            continue
        found.append(f"pid {pid} ({held / 2**30:.1f} GiB)" if isinstance(held, int) and held >= 0 else f"pid {pid}")
    return tuple(found)


def gpu_contention(start: BoardState | None, end: BoardState | None) -> tuple[int, str]:
    """(the largest count of other processes on the device at either read, 'other processes on the GPU: ...')."""
    lists = [state.other_processes for state in (start, end) if state is not None]
    if not lists:
        return 0, ""
    count = max(len(found) for found in lists)
    names = sorted({name for found in lists for name in found})
    return count, (f"other processes on the GPU during the measured pass: {', '.join(names)}" if names else "")


def mean_utilisation(samples: Iterable[tuple[int, float]], from_us: int, until_us: int) -> float | None:
    """Mean of a driver's utilisation samples (timestamp in microseconds, percent) inside the measured part, as a
    fraction; None when no sample fell inside it."""
    inside = [value for stamp, value in samples if from_us <= stamp <= until_us]
    return sum(inside) / len(inside) / 100 if inside else None


def starved(utilisation: float | None, limit: float, device: str) -> str:
    """'starved: 23 % mean GPU utilisation during the measured part (limit 50 %)', or '' at or above the limit."""
    if utilisation is None or utilisation >= limit:
        return ""
    return (f"starved: {100 * utilisation:.0f} % mean {device} utilisation during the measured part "
            f"(limit {100 * limit:g} %)")
