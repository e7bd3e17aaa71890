"""A measured part repeated inside one clock until it lasts the protocol's `min_measured_s` (pure rules).

A pass on a fast device can finish its corpus in a fraction of a second, and five such durations time clock noise
and boost behaviour. The child then processes the corpus again, inside the same clock, until the clock has run at
least `min_measured_s`; `pass_s` is the clock's span over the repetitions (one corpus, as without repetitions), every
repetition's outputs are compared with the first's, and only the first's are exported and judged.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpucost_mlflow.core.names import COLD_SHAPES_RATIO, COOLDOWN_S, IMPORT_S, MEASURED_TOTAL_S, PASS_S, TIMINGS


def again(elapsed_s: float, min_measured_s: float | None, laps: int = 1, min_laps: int = 1) -> bool:
    """Whether the clock must go on with another repetition of the corpus: fewer than min_laps laps so far, or a
    clock still under min_measured_s."""
    return laps < min_laps or (min_measured_s is not None and elapsed_s < min_measured_s)


SETUP_IN_RATE = ("recorded before steady laps (issue 62): its one duration includes the setup of each new input "
                 "shape, read as rate")


@dataclass(frozen=True)
class Laps:
    """One pass's laps read apart (issue 62): the first, the steady lap (the median of the later ones), the setup the
    first paid beyond it (never below 0) and how many first laps' worth that is; one lap alone has no steady lap."""

    first_s: float
    steady_s: float | None
    setup_s: float | None

    @classmethod
    def of(cls, laps: Sequence[float]) -> Laps:
        later = list(laps[1:])
        if not later:
            return cls(laps[0], None, None)
        steady = statistics.median(later)
        return cls(laps[0], steady, max(0.0, laps[0] - steady))

    @property
    def ratio(self) -> float | None:
        """The first lap over the steady one (None without a steady lap, or a steady lap of 0)."""
        return self.first_s / self.steady_s if self.steady_s else None

    def cold(self) -> str:
        """Why the pass is flagged cold_shapes, '' when its first lap is within COLD_SHAPES_RATIO of the steady one."""
        if self.ratio is None or self.ratio <= COLD_SHAPES_RATIO:
            return ""
        return (f"first lap {self.first_s:.3f} s, {self.ratio:.1f}x the steady {self.steady_s:.3f} s: likely the setup "
                "of each new input shape (cuDNN attention plans, compiled graphs, allocator growth), paid once per "
                "worker process; the steady lap is the rate")


def per_corpus(total_s: float, repetitions: int) -> float:
    """One corpus's seconds: the clock's span over the repetitions it held."""
    return total_s / max(1, repetitions)


def timed_seconds(metrics: Mapping[str, float]) -> float:
    """The seconds of a pass's run that its timed parts account for: load, warm-up, the whole measured clock (every
    repetition), evaluation, export, and the cooldown it waited; the rest of its wall time is harness overhead. A
    forked child's load counts imports its starter made once, before the pass (import_s): not this run's seconds."""
    total = 0.0
    for key in TIMINGS:
        value = metrics.get(MEASURED_TOTAL_S, metrics.get(PASS_S)) if key == PASS_S else metrics.get(key)
        total += float(value or 0.0)
    return total + float(metrics.get(COOLDOWN_S) or 0.0) - float(metrics.get(IMPORT_S) or 0.0)


def one_corpus_each(first_laps: Sequence[float | None], pass_s: Sequence[float],
                    steady_laps: Sequence[float | None] = ()) -> tuple[float, ...]:
    """Each pass's duration of one corpus at the steady rate: its steady lap (the median of its laps after the
    first, issue 62); for a pass recorded before steady laps, its first lap where the clock repeated the corpus
    (min_measured_s), else its pass_s, each of which includes the setup of every new input shape (SETUP_IN_RATE).
    Stability, separation and the slowest pass then compare like with like (docs/costs.md)."""
    firsts = list(first_laps) or [None] * len(pass_s)
    steadies = list(steady_laps) or [None] * len(pass_s)
    return tuple(_given(steady) if _given(steady) is not None else
                 _given(lap) if _given(lap) is not None else float(whole)
                 for steady, lap, whole in zip(steadies, firsts, pass_s))


def steady_or_whole(steady_laps: Sequence[float | None], pass_s: Sequence[float]) -> tuple[float, ...]:
    """Each pass's time separation reads: its steady lap, or for a pass recorded before steady laps its pass_s over
    the whole clock (never a single sub-second lap of a repeated corpus)."""
    steadies = list(steady_laps) or [None] * len(pass_s)
    return tuple(_given(steady) if _given(steady) is not None else float(whole)
                 for steady, whole in zip(steadies, pass_s))


def _given(value: float | None) -> float | None:
    """A recorded figure, None where the pass has none (a missing metric reads as NaN in a table)."""
    return None if value is None or math.isnan(value) else float(value)
