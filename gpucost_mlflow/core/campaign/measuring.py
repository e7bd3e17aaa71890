"""A campaign's machine time (issue 63, the price of measuring): what the measuring itself held the machine for,
summed over the campaign's sessions (a resume is one more).

Three figures, one identity each way: the campaign's wall (every session from its start to its record) is its
passes' walls (each pass from its launch to its record) plus its idle time (inside no pass: opening, locks,
re-judging, closing); its harness time is the wall outside the passes' timed parts (load, warm-up, the measured
clock, evaluation, export, cooldown), the one definition `harness_overhead_s_per_pass` gives per pass, so the idle
time is part of it. Pure arithmetic on seconds; the hours a store records come from `hours`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gpucost_mlflow.core.measurement.repetitions import timed_seconds

HOUR_S = 3600.0


@dataclass(frozen=True)
class Measuring:
    """A campaign's machine time in seconds: its wall, its passes' walls, and the timed parts inside them."""

    wall_s: float = 0.0
    passes_s: float = 0.0
    timed_s: float = 0.0

    @property
    def idle_s(self) -> float:
        """The wall inside no pass."""
        return max(0.0, self.wall_s - self.passes_s)

    @property
    def harness_s(self) -> float:
        """The wall outside the passes' timed parts (idle included)."""
        return max(0.0, self.wall_s - self.timed_s)

    @property
    def hours(self) -> float:
        return self.wall_s / HOUR_S

    def plus(self, other: Measuring) -> Measuring:
        """Two sessions of one campaign together."""
        return Measuring(self.wall_s + other.wall_s, self.passes_s + other.passes_s, self.timed_s + other.timed_s)

    def in_hours(self) -> dict[str, float]:
        """'wall', 'passes', 'harness' and 'idle', each in hours: what tracking/campaign_run.py records."""
        return {"wall": self.hours, "passes": self.passes_s / HOUR_S, "harness": self.harness_s / HOUR_S,
                "idle": self.idle_s / HOUR_S}

    def line(self) -> str:
        """'measuring: 0.110 h (passes 0.095 h, harness 0.030 h outside their timed parts, idle 0.015 h)'."""
        h = self.in_hours()
        return (f"measuring: {h['wall']:.3f} h (passes {h['passes']:.3f} h, harness {h['harness']:.3f} h outside "
                f"their timed parts, idle {h['idle']:.3f} h outside every pass)")


def session(wall_s: float, pass_walls: Iterable[float], metrics: Iterable[Mapping[str, float]]) -> Measuring:
    """One session's machine time: its wall, each pass's wall, and each pass's metrics (their timed parts)."""
    return Measuring(wall_s, sum(pass_walls), sum(timed_seconds(m) for m in metrics))


def from_hours(wall_h: float, passes_h: float, harness_h: float) -> Measuring:
    """The figures an earlier session recorded (in hours), read back to add the next session's."""
    wall_s = wall_h * HOUR_S
    return Measuring(wall_s, passes_h * HOUR_S, max(0.0, wall_s - harness_h * HOUR_S))
