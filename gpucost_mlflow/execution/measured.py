"""The measured pass itself, between the clock's two reads: the corpus read and processed, again until the protocol's
min_measured_s and min_laps are met, and nothing else (execution/runner.py reads everything around it, outside the
clock). The pass's child calls it; the benchmarks time the same function against a bare loop.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.core.measurement.repetitions import again
from gpucost_mlflow.execution import timing
from gpucost_mlflow.execution.outcome import PassFailure


def read_texts(corpus_path: str) -> tuple[list[str], list[str]]:
    """Ids and texts of the corpus file, in file order (the launcher validated it already)."""
    with open(corpus_path, encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    return [r["id"] for r in records], [r["text"] for r in records]


@dataclass(frozen=True)
class Processing:
    """One corpus's worth of work as the measured clock calls it: the kind's `process` with what it runs on."""

    process: Callable  # Work.process: (ids, texts, tokenizer, model, settings, device, on_batch) -> outputs
    tokenizer: object
    model: object
    settings: Settings
    device: object
    on_batch: Callable | None = None

    def __call__(self, ids: list[str], texts: list[str]) -> object:
        return self.process(ids, texts, self.tokenizer, self.model, self.settings, self.device, self.on_batch)


def measure(corpus_path: str, work: Processing, sync: Callable, energy=None, events=None, *, clock=None,
            repeats=None) -> tuple[object, float]:
    """The measured pass: synchronise, read the energy counter, start the clock, record the start event,
    read, tokenize, transfer, infer, bring to host, record the end event, synchronise, stop, read the
    energy counter. Nothing else happens between the two clock reads; the counter reads are adjacent to
    them, outside the interval, and no thread samples anything inside it. A failure is raised as PassFailure
    with the clock's time to it. `clock` (a timing.Stopwatch) keeps its two reads for the caller; `repeats` (the
    protocol's min_measured_s) makes the clock read and process the corpus again until it ran that long, keeping
    the later repetitions' outputs, and the seconds returned are then the clock's whole span."""

    clock = clock if clock is not None else timing.Stopwatch(sync)
    events = events if events is not None else timing.DeviceEvents()
    sync()
    if energy is not None:
        energy.read_before()
    clock.start()
    events.record_start()
    try:
        ids, texts = read_texts(corpus_path)
        predictions = work(ids, texts)
        # Each lap reads the clock (a device synchronisation); a clock of one lap (a deliverable, a lanes pass) reads
        # nothing more inside it.
        laps = repeats is not None and (repeats.min_measured_s is not None or repeats.min_laps > 1)
        while laps and again(repeats.lapped(clock), repeats.min_measured_s, repeats.count, repeats.min_laps):
            ids, texts = read_texts(corpus_path)
            repeats.later.append(work(ids, texts))
            repeats.count += 1
    except BaseException as exc:  # noqa: BLE001 - raised again as PassFailure, with the clock's time to it
        failure = PassFailure.of(exc, clock.stop())
        if energy is not None:
            energy.read_after()
        raise failure from failure.cause
    events.record_end()
    seconds = clock.stop()
    if energy is not None:
        energy.read_after()
    return predictions, seconds
