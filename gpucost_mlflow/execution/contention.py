"""The child's reads of other processes' CPU time, adjacent to the measured clock, and what they make of the measured
part (the arithmetic: core/measurement/contention.py)."""

from __future__ import annotations

import os

from gpucost_mlflow.core.measurement.contention import CpuSample, busy_seconds, others
from gpucost_mlflow.core.names import CPU_UTILISATION, OTHER_CPU_S, OTHER_CPU_SHARE

PROC_STAT = "/proc/stat"


def sample() -> CpuSample | None:
    """The machine's busy CPU seconds and this process's own (every thread), now; None without /proc/stat."""
    try:
        with open(PROC_STAT, encoding="ascii") as handle:
            text = handle.read()
        busy = busy_seconds(text, os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError):
        return None
    own = os.times()
    return CpuSample(busy, own.user + own.system)


def cpus() -> int:
    """The CPUs this process may run on (its affinity), the machine's count where affinity is not known."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def during(before: CpuSample | None, after: CpuSample | None, measured_s: float | None) -> dict:
    """Other processes' CPU seconds and share during the measured part (every repetition), and the pass's own share
    of the machine's CPU time then, or why they were not read: an outcome part."""
    keys = (OTHER_CPU_S, OTHER_CPU_SHARE, CPU_UTILISATION)
    if before is None or after is None:
        why = "no /proc/stat on this system: other processes' load not read"
        return {"missing_measurements": dict.fromkeys(keys, why)}
    if measured_s is None:
        return {"missing_measurements": dict.fromkeys(keys, "pass did not complete")}
    count = cpus()
    other, share = others(before, after, measured_s, count)
    own = max(0.0, after.own_s - before.own_s) / (measured_s * count) if measured_s > 0 else 0.0
    return {"metrics": {OTHER_CPU_S: other, OTHER_CPU_SHARE: share, CPU_UTILISATION: min(1.0, own)}}
