"""What a pass's child hands back across the process boundary: the outcome record, and the failure that carries
what the measured pass got done before it stopped.

The child writes one `PassOutcome` as `outcome.json` in its work folder; the launcher reads it back with
`PassOutcome.read`. Both sides go through this module, so the file has one shape.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from gpucost_mlflow.core.judging.status import Status

OUTCOME = "outcome.json"


@dataclass(frozen=True)
class Timings:
    """The stage times (a stage that did not run is None, never 0) and the measured clock's bounds: its wall-clock
    bounds read outside it, and its own reads (time.perf_counter_ns: CLOCK_MONOTONIC on Linux, one clock for every
    process of the machine), so the span of several lanes is taken from the clocks themselves."""

    load_s: float | None = None
    warmup_s: float | None = None
    pass_s: float | None = None  # the protocol's figure: None unless the measured pass completed
    export_s: float | None = None
    elapsed_until_failure_s: float | None = None
    measured_from_epoch_s: float | None = None
    measured_until_epoch_s: float | None = None
    clock_started_ns: int | None = None
    clock_stopped_ns: int | None = None

    def named(self, names: tuple[str, ...]) -> dict[str, float]:
        """The named timings this pass has (a stage that did not run is absent, never 0)."""
        return {name: getattr(self, name) for name in names if getattr(self, name, None) is not None}


@dataclass(frozen=True)
class Counted:
    """What the pass counted: entries completed (None: not known, with why), memory peaks by their counter, and the
    generic metrics, missing measurements and run tags the launcher logs as they are (energy, device events, FLOP
    rates, a workload's figures), with the cached device peak MFU was computed against."""

    completed_entries: int | None = 0
    completed_entries_reason: str = ""
    memory_peaks: dict[str, float] = field(default_factory=dict)  # metric name -> bytes, from memory_counter
    memory_counter: str = ""
    metrics: dict[str, float] = field(default_factory=dict)
    missing_measurements: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    peak: dict = field(default_factory=dict)


@dataclass(frozen=True)
class BoardFacts:
    """The device's own record around the pass: the board's state (clocks, temperature, throttling, other
    processes), the energy counter's facts, the driver; a lanes pass's lanes beside the first's."""

    facts: dict = field(default_factory=dict)


# What a part of the child reports (energy, contention, the board's state, a workload's utilisation) as a plain
# mapping, and the record each key joins: `merge` adds its entries to that record's own.
PARTS = {"metrics": "measured", "missing_measurements": "measured", "tags": "measured", "peak": "measured",
         "device_facts": "board", "stack": "stack"}


@dataclass
class PassOutcome:
    """One pass as the child saw it: status, reason and traceback, the device and determinism it ran with, and its
    `Timings`, `Counted` and `BoardFacts` records, the stack it saw; a lanes pass also each lane's own outcome.

    The one mutable record of the tree: the child's builder, filled stage by stage (load, cool-down, warm-up, the
    measured part, the reads after it, the export) across the runner's functions; its three parts are frozen and
    replaced whole (`timed`, `counted`, `merge`)."""

    status: str = Status.FAILED  # Status.COMPLETED or Status.FAILED
    reason: str = ""  # why it failed: one line
    error: str = ""  # the failure's traceback, kept as the run's error artifact
    device: str = ""
    tokenizer_parallelism: bool | None = None
    deterministic: dict = field(default_factory=dict)
    timings: Timings = field(default_factory=Timings)
    measured: Counted = field(default_factory=Counted)
    board: BoardFacts = field(default_factory=BoardFacts)
    # what the child saw of the stack, joined to the manifest's by the launcher (the attention kernel: `sdpa`)
    stack: dict = field(default_factory=dict)
    lanes: list[dict] = field(default_factory=list)  # a lanes pass: each lane's own outcome (execution/lanes.py)

    @property
    def completed(self) -> bool:
        return self.status == Status.COMPLETED

    def timed(self, **stages: float | None) -> None:
        """These timings set, the rest kept."""
        self.timings = replace(self.timings, **stages)

    def counted(self, **found: object) -> None:
        """These counts set, the rest kept."""
        self.measured = replace(self.measured, **found)

    def merge(self, found: dict) -> None:
        """Add a part's metrics, missing measurements, tags, device facts and stack to the records' own (its peak
        replaces the one known)."""
        for key, value in found.items():
            if key not in PARTS:
                raise TypeError(f"a part of the pass's outcome has no record for {key!r}")
            if key == "device_facts":
                self.board = BoardFacts({**self.board.facts, **value})
            elif key == "stack":
                self.stack = {**self.stack, **value}
            elif key == "peak":
                self.counted(peak=value)
            else:
                self.counted(**{key: {**getattr(self.measured, key), **value}})

    def write(self, workdir: Path) -> None:
        (workdir / OUTCOME).write_text(json.dumps(asdict(self), indent=2), encoding="utf-8")

    @classmethod
    def read(cls, workdir: Path) -> PassOutcome | None:
        """The outcome the child wrote in its work folder, or None if it wrote none."""
        path = workdir / OUTCOME
        if not path.exists():
            return None
        values = json.loads(path.read_text(encoding="utf-8"))
        return cls(**{**values, "timings": Timings(**values["timings"]), "measured": Counted(**values["measured"]),
                      "board": BoardFacts(**values["board"])})


class PassFailure(Exception):
    """A failure inside the measured pass, carrying the exception that stopped it, the outputs of the batches
    finished before it (on the host), and the measured clock's time to the failure once the clock stopped."""

    def __init__(self, cause: BaseException, partial: object = None, elapsed_s: float | None = None) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.partial = partial
        self.elapsed_s = elapsed_s

    @classmethod
    def of(cls, exc: BaseException, elapsed_s: float | None = None) -> PassFailure:
        """The failure for an exception raised in the pass: a PassFailure keeps its cause and partial outputs."""
        if isinstance(exc, PassFailure):
            return cls(exc.cause, exc.partial, elapsed_s if elapsed_s is not None else exc.elapsed_s)
        return cls(exc, None, elapsed_s)
