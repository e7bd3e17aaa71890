"""The real schedule of a device's attempts: their wall-clock spans, overlapping ones counted once (PROTOCOL.md §9).

Attempts run side by side on the GPUs of one lot (one host) held the rental once, not twice: the comparisons
term of a forecast is the union of their spans per host, summed over hosts (each host is rented apart). The
plain sum is kept beside it so a reader sees what the overlap saved.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """One attempt's run, start to end in seconds since the epoch, on the host (lot) it held."""

    start_s: float
    end_s: float
    host: str = ""

    @property
    def seconds(self) -> float:
        return max(0.0, self.end_s - self.start_s)


def union_seconds(spans: Iterable[Span]) -> float:
    """Seconds during which at least one attempt ran, per host, summed over hosts (overlaps counted once). Every
    configuration of a device forecasts with the device's same spans: a tuple's answer is kept."""
    return _union_of(spans if isinstance(spans, tuple) else tuple(spans))


@functools.lru_cache(maxsize=64)
def _union_of(spans: tuple[Span, ...]) -> float:
    by_host: dict[str, list[Span]] = {}
    origin = min((span.start_s for span in spans), default=0.0)  # offsets keep sub-millisecond precision
    for span in spans:
        by_host.setdefault(span.host, []).append(Span(span.start_s - origin, span.end_s - origin, span.host))
    total = 0.0
    for host_spans in by_host.values():
        end = None
        for span in sorted(host_spans, key=lambda s: (s.start_s, s.end_s)):
            if end is None or span.start_s >= end:
                total += span.seconds
                end = span.end_s
            elif span.end_s > end:
                total += span.end_s - end
                end = span.end_s
    return total


def sum_seconds(spans: Iterable[Span]) -> float:
    """Every attempt's run time added up, as if none had overlapped."""
    return sum(span.seconds for span in spans)


def concurrent(spans: list[tuple[str, Span]]) -> dict[str, int]:
    """For each run, how many other runs on the same host were running at some moment of its own span (sorted
    starts and ends per host, so a store of thousands of attempts is counted in n log n, not n squared)."""
    from bisect import bisect_left, bisect_right

    by_host: dict[str, list[tuple[str, Span]]] = {}
    for run_id, span in spans:
        by_host.setdefault(span.host, []).append((run_id, span))
    counts: dict[str, int] = {}
    for members in by_host.values():
        starts = sorted(span.start_s for _, span in members)
        ends = sorted(span.end_s for _, span in members)
        for run_id, span in members:
            begun_before_my_end = bisect_left(starts, span.end_s)
            ended_by_my_start = bisect_right(ends, span.start_s)
            counts[run_id] = max(0, begun_before_my_end - ended_by_my_start - 1)
    return counts
