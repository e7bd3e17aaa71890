"""The child's reads of other processes' CPU time, adjacent to the measured clock (core/measurement/contention.py)."""

from __future__ import annotations

import os

from gpucost_mlflow.core.measurement.contention import CpuSample, busy_seconds

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
