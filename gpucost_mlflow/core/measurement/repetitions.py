"""A measured part repeated inside one clock until it lasts the protocol's `min_measured_s` (pure rules).

A pass on a fast device can finish its corpus in a fraction of a second, and five such durations time clock noise
and boost behaviour. The child then processes the corpus again, inside the same clock, until the clock has run at
least `min_measured_s`; `pass_s` is the clock's span over the repetitions (one corpus, as without repetitions), every
repetition's outputs are compared with the first's, and only the first's are exported and judged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from gpucost_mlflow.core.names import COOLDOWN_S, MEASURED_TOTAL_S, PASS_S, TIMINGS


def again(elapsed_s: float, min_measured_s: float | None) -> bool:
    """Whether the clock must go on with another repetition of the corpus."""
    return min_measured_s is not None and elapsed_s < min_measured_s


def per_corpus(total_s: float, repetitions: int) -> float:
    """One corpus's seconds: the clock's span over the repetitions it held."""
    return total_s / max(1, repetitions)


def timed_seconds(metrics: Mapping[str, float]) -> float:
    """The seconds of a pass's run that its timed parts account for: load, warm-up, the whole measured clock (every
    repetition), evaluation, export, and the cooldown it waited; the rest of its wall time is harness overhead."""
    total = 0.0
    for key in TIMINGS:
        value = metrics.get(MEASURED_TOTAL_S, metrics.get(PASS_S)) if key == PASS_S else metrics.get(key)
        total += float(value or 0.0)
    return total + float(metrics.get(COOLDOWN_S) or 0.0)


def one_corpus_each(first_laps: Sequence[float | None], pass_s: Sequence[float]) -> tuple[float, ...]:
    """Each pass's duration of one corpus timed alone: its first lap where the clock repeated the corpus
    (min_measured_s), else its pass_s. A repeated pass's pass_s is a mean over its laps, whose spread is narrower
    than one corpus's: stability, separation and the slowest pass then compare like with like (docs/costs.md)."""
    laps = list(first_laps) or [None] * len(pass_s)
    return tuple(float(lap) if lap is not None and not math.isnan(lap) else float(whole)
                 for lap, whole in zip(laps, pass_s))
