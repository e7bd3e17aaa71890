"""Passes whose measured clocks overlapped on one host: they competed for the machine (PROTOCOL.md §6).

Such durations are not ordinary measurements: the report counts them per configuration and names the
runs; excluding them stays the user's documented choice (`gpucost exclude`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Interval:
    """The wall-clock span of one pass's measured clock, on the host it ran on."""

    run_id: str
    host: str
    start: float
    end: float


def overlaps(intervals: list[Interval]) -> dict[str, list[str]]:
    """For each run, the runs on the same host whose measured span intersected its own (in start order)."""
    found: dict[str, list[str]] = {}
    by_host: dict[str, list[Interval]] = {}
    for interval in intervals:
        if interval.host and interval.end >= interval.start:
            by_host.setdefault(interval.host, []).append(interval)
    for spans in by_host.values():
        spans.sort(key=lambda i: (i.start, i.end))
        for index, first in enumerate(spans):
            for second in spans[index + 1:]:
                if second.start >= first.end:
                    break
                found.setdefault(first.run_id, []).append(second.run_id)
                found.setdefault(second.run_id, []).append(first.run_id)
    return found


def describe(others: list[str], host: str) -> str:
    """The pass description's sentence naming the runs it overlapped."""
    return (f"Measured clock overlapped {len(others)} other pass(es) on host {host}: {', '.join(others)}. Their "
            "durations competed for the machine (PROTOCOL.md §6, concurrent activity); excluding them is your "
            "documented choice (`gpucost exclude RUN_ID --reason operator --note ...`).")
