"""The child's side of a measured part repeated inside one clock (the rules: core/measurement/repetitions.py): what
the clock held, and, after it stopped, every later repetition's outputs compared with the first's exported files."""

from __future__ import annotations

import filecmp
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from gpucost_mlflow.core.measurement.repetitions import Laps
from gpucost_mlflow.core.names import (
    DISTINCT_SHAPES,
    FIRST_LAP_S,
    LAP_S,
    MEASURED_TOTAL_S,
    REPETITIONS,
    REPETITIONS_IDENTICAL,
    SHAPE_SETUP_S,
    STEADY_LAP_S,
    stepped,
)


@dataclass
class Repeats:
    """The repetitions of the corpus one clock held: how many, and the outputs of every repetition after the first,
    compared with the first's once the clock stopped."""

    min_measured_s: float | None = None
    min_laps: int = 1  # laps the clock holds at least (a measured pass: the protocol's min_laps, 2 by default)
    count: int = 1
    later: list = field(default_factory=list)
    laps: list = field(default_factory=list)  # the clock's reading after each repetition, from its start
    shapes: set = field(default_factory=set)  # the (batch, padded length) shapes the first lap ran, where reported

    def lapped(self, clock) -> float:
        """The clock's reading after one more repetition of the corpus, kept as that repetition's lap."""
        reading = clock.lap()
        self.laps.append(reading)
        return reading


def compared(repeats: Repeats, measured_s: float, work, workdir: Path, fault) -> dict:
    """How many times the clock processed the corpus, its whole span, and whether every later repetition's outputs
    export to the same bytes as the first's (the one export), written to a scratch folder after the clock."""
    metrics = {REPETITIONS: float(repeats.count), MEASURED_TOTAL_S: measured_s}
    missing = {}
    if repeats.laps:
        readings = repeats.laps[:repeats.count]
        laps = [later - earlier for earlier, later in zip([0.0, *readings], readings)]
        metrics[FIRST_LAP_S] = laps[0]
        metrics.update({stepped(LAP_S, step): lap for step, lap in enumerate(laps, start=1)})
        read = Laps.of(laps)
        if read.steady_s is not None:
            metrics.update({STEADY_LAP_S: read.steady_s, SHAPE_SETUP_S: read.setup_s})
    if repeats.shapes:
        metrics[DISTINCT_SHAPES] = float(len(repeats.shapes))
    else:
        missing[DISTINCT_SHAPES] = "the workload does not report its batches' shapes (an endpoint, user code)"
    if not repeats.later:
        return {"metrics": metrics, "missing_measurements": missing}
    identical = True
    with tempfile.TemporaryDirectory(prefix="gpucost-repeat-") as scratch:
        for later in repeats.later:
            work.export(Path(scratch), later, fault.dupid_at)
            names = sorted(p.name for p in Path(scratch).iterdir())
            identical = identical and all(filecmp.cmp(Path(scratch) / name, workdir / name, shallow=False)
                                          for name in names if (workdir / name).exists())
    repeats.later.clear()
    return {"metrics": {**metrics, REPETITIONS_IDENTICAL: 1.0 if identical else 0.0}, "missing_measurements": missing}
