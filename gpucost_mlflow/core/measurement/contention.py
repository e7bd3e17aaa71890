"""Load from other processes during a pass's measured part: the machine's busy CPU time less the pass's own.

Read just outside the clock (execution/contention.py): the machine's busy CPU seconds from /proc/stat and the
child's own CPU seconds, before and after. What other processes used, over the CPU time the machine had in that
wall time, is their share; above the protocol's `max_other_cpu_share` the pass is flagged "contended" (a flag, not
a verdict: the report points to `gpucost exclude --reason contended` with these figures as the note). Pure arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass

# user, nice, system, irq, softirq, steal: /proc/stat's busy columns (not idle, iowait)
BUSY_FIELDS = (0, 1, 2, 5, 6, 7)
DEFAULT_MAX_SHARE = 0.25


@dataclass(frozen=True)
class CpuSample:
    """The machine's busy CPU seconds and this process's own, at one instant."""

    busy_s: float
    own_s: float


def busy_seconds(proc_stat: str, ticks_per_s: float) -> float:
    """The machine's busy CPU seconds since boot, from the aggregate `cpu` line of /proc/stat."""
    for line in proc_stat.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            values = [float(v) for v in fields[1:]]
            return sum(values[i] for i in BUSY_FIELDS if i < len(values)) / ticks_per_s
    raise ValueError("no aggregate cpu line in /proc/stat")


def others(before: CpuSample, after: CpuSample, wall_s: float, cpus: int) -> tuple[float, float]:
    """(CPU seconds other processes used, their share of the CPU time the machine had in wall_s)."""
    other = max(0.0, (after.busy_s - before.busy_s) - (after.own_s - before.own_s))
    capacity = wall_s * max(1, cpus)
    return other, (other / capacity if capacity > 0 else 0.0)


def contended(other_s: float | None, share: float | None, limit: float) -> str:
    """'other processes used 1.70 CPU-s during the measured pass, 85 % of the machine's CPU time (limit 25 %)', or ''
    under the limit (or when the load was not read)."""
    if other_s is None or share is None or share <= limit:
        return ""
    return (f"other processes used {other_s:.2f} CPU-s during the measured pass, {100 * share:.0f} % of the "
            f"machine's CPU time (limit {100 * limit:g} %)")
