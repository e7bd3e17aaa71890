"""The pass itself, run in a child process: load, warm-up, the measured pass (`execution/measured.py`), export.

The launcher writes a spec JSON, starts `python -m gpucost_mlflow.execution.runner SPEC`, and reads
back the outcome (`execution/outcome.py`) and the deliverable files its kind exports from the work folder. It knows no
kind: the spec names the module its workload is loaded from (`core/kinds/registry.implementation`). This module never
imports mlflow.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.kinds import base
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.core.kinds.workload import WorkloadRecord
from gpucost_mlflow.core.measurement.repetitions import per_corpus
from gpucost_mlflow.core.names import (
    IDLE_POWER_W,
    IMPORT_S,
    LOAD_S,
    WARMUP_S,
)
from gpucost_mlflow.execution import faults, gate, timing
from gpucost_mlflow.execution.batch_counter import BatchCounter
from gpucost_mlflow.execution.measured import Processing, measure, read_texts
from gpucost_mlflow.execution.outcome import Counted, PassFailure, PassOutcome

WARMUP_RULE = {
    "inputs": 32,
    "passes": 1,
    "selection": "the first inputs of the corpus file, processed with the variant's own batching",
    "recompilations": "counted inside warm-up; none expected after it for eager models",
}
SEED = 0


@dataclass(frozen=True)
class PassSpec:
    """Everything the child needs, as plain JSON: paths, the variant's settings, the rules."""

    corpus_path: str
    model_path: str
    workdir: str
    settings: Settings
    warmup: dict = field(default_factory=lambda: {k: WARMUP_RULE[k] for k in ("inputs", "passes")})
    seed: int = SEED
    fault: str = ""
    gate: bool = False  # a lane: wait for the launcher's go before the measured pass (execution/gate.py)
    implementation: str = ""  # the module the workload is loaded from: its kind's child on its engine (the launcher's
    # core/kinds/registry.implementation)
    # what the workload needs beyond the variant's settings, as the launcher checked it: its kind's record
    # (core/kinds/workload.py; generation: the task, the model file and its dequantised cache; user code: its module)
    workload: WorkloadRecord | None = None
    min_measured_s: float | None = None  # the protocol's: repeat the corpus inside the clock until it ran this long
    min_laps: int = 1  # laps the clock holds at least: a measured pass's the protocol's min_laps (2 by default)
    cooldown_s: float = 0.0  # the protocol's: idle this long after loading, before warm-up (idle power)
    # A delivery (`gpucost deliver`): further corpora after the first, each {corpus_path, workdir}, processed by this
    # child with the workload it loaded and warmed up once; each corpus's outcome is written to its own workdir.
    more: list = field(default_factory=list)

    def document(self) -> str:
        """The spec as the JSON the child reads (its settings in their recorded form)."""
        workload = self.workload.record() if self.workload is not None else None
        return json.dumps({**self.__dict__, "settings": self.settings.record(), "workload": workload})

    @classmethod
    def read(cls, path: Path) -> PassSpec:
        """The spec a launcher wrote (`document`), its settings and workload typed again by the records of the kind
        whose module it names (no registry read in the child: its kind's package is the implementation's)."""
        values = json.loads(path.read_text(encoding="utf-8"))
        package = values.get("implementation", "").rpartition(".")[0]
        workload = values.get("workload")
        return cls(**{**values, "settings": base.settings_record(package).from_record(values["settings"]),
                      "workload": base.workload_record(package).from_record(workload) if workload else None})


def tokenizer_parallelism(settings: Settings) -> bool:
    """Let the fast tokenizer encode the corpus on every core (this child never forks while it tokenizes),
    except under torch.compile, whose compile workers fork; returns the choice, the same for every variant."""
    parallel = not settings.compile
    os.environ["TOKENIZERS_PARALLELISM"] = "true" if parallel else "false"
    return parallel


def _seconds(start_ns: int) -> float:
    return (time.perf_counter_ns() - start_ns) / 1e9


@dataclass
class Loaded:
    """What one child loads once and every corpus it processes uses: the workload, its device, sync and board."""

    work: object
    device: object
    sync: Callable
    board: object
    fault: object
    parallel: bool
    shapes_met: set = field(default_factory=set)  # every batch shape this process has run, warm-up included


def load(spec: PassSpec, started_ns: int) -> tuple[Loaded, PassOutcome]:
    """Load the workload, cool down and warm up, once per child; the loaded parts and the first corpus's outcome so
    far (load, cooldown and warm-up times)."""
    import torch

    from gpucost_mlflow.execution import energy, faults, forkserver, models  # deferred: torch; forkserver imports this

    settings = spec.settings
    outcome = PassOutcome(tokenizer_parallelism=tokenizer_parallelism(settings))
    fault = faults.parse(spec.fault)
    torch.manual_seed(spec.seed)
    device = models.resolve_device(settings.device)
    sync = torch.cuda.synchronize if device.type == "cuda" else timing.no_sync
    work = load_workload(spec, device)
    sync()
    imports = forkserver.imported_s()  # a forked child's imports, made once by its starter, are its load too
    outcome.timed(load_s=_seconds(started_ns) + (imports or 0.0))
    if imports is not None:
        outcome.counted(metrics={**outcome.measured.metrics, IMPORT_S: imports})
    outcome.device = str(device)
    outcome.deterministic = determinism(spec.seed)
    board = energy.open_board(device)
    outcome.merge(energy.cool_down(board, spec.cooldown_s, sync))
    loaded = Loaded(work, device, sync, board, fault, outcome.tokenizer_parallelism)
    outcome.timed(warmup_s=_warm_up(spec, loaded))
    return loaded, outcome


def run(spec: PassSpec, started_ns: int) -> PassOutcome:
    """Run one pass as the spec says; return its outcome (main writes it to the work folder)."""
    loaded, outcome = load(spec, started_ns)
    return measure_corpus(spec, loaded, spec.corpus_path, Path(spec.workdir), outcome)


def measure_corpus(spec: PassSpec, loaded: Loaded, corpus_path: str, workdir: Path, outcome: PassOutcome
                   ) -> PassOutcome:
    """One corpus through the loaded workload: the measured part and what is read around it, its export."""
    from gpucost_mlflow.execution import (  # deferred: imports torch
        board_state,
        contention,
        energy,
        memory,
        repetitions,
        timing,
    )

    work, device, sync, board, fault = loaded.work, loaded.device, loaded.sync, loaded.board, loaded.fault
    memory.reset_peaks(device)
    counter = BatchCounter(workdir)
    events = timing.DeviceEvents.for_device(device)
    repeats = repetitions.Repeats(spec.min_measured_s, spec.min_laps)

    def on_batch(number: int, done: int, shape: tuple[int, int] | None = None) -> None:
        counter.record(number, done)
        if shape is not None:
            _met(loaded, shape)
            if not repeats.laps:  # the first lap: the shapes every lap runs
                repeats.shapes.add(shape)
        fault.fire(number)

    # The board's facts at the start (clocks, power limit), then the wall-clock bounds of the measured
    # pass, read outside its clock: how overlapping passes are found.
    facts = board.facts()
    probe = energy.EnergyProbe(board)
    if spec.gate:
        gate.wait(workdir)
    clock = timing.Stopwatch(sync)
    state_before = board_state.board_state(board)  # clocks, temperature, throttling, other processes: outside the clock
    outcome.timed(measured_from_epoch_s=time.time())
    out_of_memory = False
    before = contention.sample()  # other processes' CPU time: read just outside the clock, like the epoch bounds
    measured_s = None
    try:
        processing = Processing(work.process, work.tokenizer, work.model, spec.settings, device, on_batch)
        predictions, measured_s = measure(corpus_path, processing, sync, probe, events, clock=clock, repeats=repeats)
        outcome.status = Status.COMPLETED
        outcome.timed(pass_s=per_corpus(measured_s, repeats.count))
    except PassFailure as failure:  # every failure is kept as a row with its reason
        predictions, out_of_memory = _failed(outcome, failure, work)
    after = contention.sample()
    outcome.timed(measured_until_epoch_s=time.time())
    state_after = board_state.board_state(board)
    outcome.merge(contention.during(before, after, measured_s))
    timings = outcome.timings
    outcome.merge(board_state.state_fields(board, state_before, state_after, timings.measured_from_epoch_s,
                                           timings.measured_until_epoch_s, measured_s))
    outcome.timed(clock_started_ns=clock.started_ns, clock_stopped_ns=clock.stopped_ns)
    _after_pass(outcome, loaded, predictions, out_of_memory, events, probe, facts, repeats.count)
    outcome.timed(export_s=_export(work, workdir, predictions, fault, sync))
    if outcome.completed:
        outcome.merge(repetitions.compared(repeats, measured_s, work, workdir, fault))
    return outcome


def _warm_up(spec: PassSpec, loaded: Loaded) -> float:
    """The warm-up passes on the first inputs of the corpus, with the variant's own batching; their seconds. The
    shapes they run are met here: a measured batch of one of them pays no setup again."""

    work, settings = loaded.work, spec.settings
    ids, texts = read_texts(spec.corpus_path)
    warm = timing.Stopwatch(loaded.sync)
    warm.start()
    for _ in range(spec.warmup["passes"]):
        work.process(ids[: spec.warmup["inputs"]], texts[: spec.warmup["inputs"]], work.tokenizer, work.model,
                     settings, loaded.device, lambda number, done, shape=None: _met(loaded, shape))
    return warm.stop()


def _met(loaded: Loaded, shape: tuple[int, int] | None) -> None:
    """A batch shape this process runs: the first time, a `shape-setup` test fault pays its setup (faults.py)."""
    if shape is not None and shape not in loaded.shapes_met:
        loaded.shapes_met.add(shape)
        loaded.fault.first_shape()


def _failed(outcome: PassOutcome, failure: PassFailure, work) -> tuple[object, bool]:
    """Record a failed pass's reason, time to the failure and traceback; its finished batches' outputs (the kind's
    empty outputs when it failed before its first batch) and whether it ran out of memory."""

    predictions = failure.partial if failure.partial is not None else work.empty()
    out_of_memory = faults.is_out_of_memory(failure.cause)
    outcome.reason = faults.reason(failure.cause)
    outcome.timed(elapsed_until_failure_s=failure.elapsed_s)
    outcome.error = "".join(traceback.format_exception(failure.cause))
    return predictions, out_of_memory


def _after_pass(outcome: PassOutcome, loaded: Loaded, predictions, out_of_memory: bool, events, probe, facts,
                repetitions: int = 1) -> None:
    """What is read once the clock stopped: entries completed, memory peaks (after releasing the cache an out of
    memory left), utilisation, energy and the device-event time (the last two per corpus: over the repetitions)."""
    from gpucost_mlflow.execution import energy, memory, timing  # deferred: imports torch

    work, device = loaded.work, loaded.device
    if out_of_memory:
        memory.release(device)
    pass_s = outcome.timings.pass_s
    peaks = (work.memory or memory.peaks)(device)
    outcome.counted(completed_entries=len(predictions.ids), memory_peaks=peaks["metrics"],
                    memory_counter=peaks["counter"])
    outcome.merge(work.utilisation(predictions, pass_s))
    event_s, no_event = events.result(outcome.completed)
    event_s = per_corpus(event_s, repetitions) if event_s is not None else None
    idle_w = outcome.measured.metrics.get(IDLE_POWER_W)
    outcome.merge(energy.outcome_fields(probe, facts, pass_s, repetitions, idle_w))
    outcome.merge({"metrics": {timing.DEVICE_EVENT_METRIC: event_s}} if event_s is not None
                  else {"missing_measurements": {timing.DEVICE_EVENT_METRIC: no_event}})


def _export(work, workdir: Path, predictions, fault, sync) -> float:
    """Write the deliverable files (a `dupid` fault duplicates one line); the seconds it took."""

    export = timing.Stopwatch(sync)
    export.start()
    work.export(workdir, predictions, fault.dupid_at)
    return export.stop()


def determinism(seed: int) -> dict:
    """The seed and torch's determinism switches this child ran with (the manifest states the launcher's)."""
    import torch

    return {
        "torch_seed": seed,
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
    }


def load_workload(spec: PassSpec, device):
    """The workload the variant names, loaded by the module the spec names: its kind's child on its engine."""
    if not spec.implementation:
        raise ValueError("the pass's spec names no implementation to load its workload from")
    return importlib.import_module(spec.implementation).load(spec, device)


LOADED_ONCE = "loaded and warmed up once, for the delivery's first corpus in this child"


def main(argv: list[str]) -> int:
    """Run the spec's corpus, then any further ones of a delivery, each outcome written to its work folder as it
    ends; a failure outside a measured part (loading, warm-up) is written as the outcome of every corpus left."""
    started_ns = time.perf_counter_ns()
    spec = PassSpec.read(Path(argv[0]))
    corpora = [(spec.corpus_path, Path(spec.workdir))] + [(m["corpus_path"], Path(m["workdir"])) for m in spec.more]
    written: list[PassOutcome] = []
    try:
        loaded, outcome = load(spec, started_ns)
        for corpus_path, workdir in corpora:
            if written:  # a later corpus: the child's load and warm-up were the first corpus's
                outcome = PassOutcome(tokenizer_parallelism=loaded.parallel, device=str(loaded.device),
                                      deterministic=determinism(spec.seed), measured=Counted(
                                          missing_measurements={LOAD_S: LOADED_ONCE, WARMUP_S: LOADED_ONCE}))
            measure_corpus(spec, loaded, corpus_path, workdir, outcome).write(workdir)
            written.append(outcome)
    except BaseException as exc:  # noqa: BLE001 - the launcher reads every ending as an outcome

        cause = exc.cause if isinstance(exc, PassFailure) else exc  # a workload failing in warm-up
        failed = PassOutcome(reason=faults.reason(cause), error="".join(traceback.format_exception(cause)))
        for _, workdir in corpora[len(written):]:
            failed.write(workdir)
        written.append(failed)
    return 0 if all(outcome.completed for outcome in written) else 1


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    code = main(sys.argv[1:])
    # Everything the launcher reads is written and closed; skip the interpreter's teardown of torch and
    # transformers (about 0.4 s a pass on 2 cores), which is harness time, not the pass's.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
