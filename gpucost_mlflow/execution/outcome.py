"""What a pass's child hands back across the process boundary: the outcome record, and the failure that carries
what the measured pass got done before it stopped.

The child writes one `PassOutcome` as `outcome.json` in its work folder; the launcher reads it back with
`PassOutcome.read`. Both sides go through this module, so the file has one shape.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from gpucost_mlflow.core.judging.status import Status

OUTCOME = "outcome.json"

# Fields a workload, the energy probe, the board's state or the device-event timer add to with their own entries: `merge` joins them.
MERGED = ("metrics", "missing_measurements", "tags", "device_facts")


@dataclass
class PassOutcome:
    """One pass as the child saw it: status, stage timings, measured bounds, memory, and the generic metrics,
    missing measurements and run tags that the launcher logs as they are (energy, device events, FLOP rates)."""

    status: str = Status.FAILED  # Status.COMPLETED or Status.FAILED
    reason: str = ""  # why it failed: one line
    completed_entries: int | None = 0  # None: not known (the child died before the measured pass)
    completed_entries_reason: str = ""  # why completed_entries is None
    error: str = ""  # the failure's traceback, kept as the run's error artifact
    device: str = ""
    tokenizer_parallelism: bool | None = None
    deterministic: dict = field(default_factory=dict)
    load_s: float | None = None
    warmup_s: float | None = None
    pass_s: float | None = None  # the protocol's figure: None unless the measured pass completed
    export_s: float | None = None
    elapsed_until_failure_s: float | None = None
    measured_from_epoch_s: float | None = None  # wall-clock bounds of the measured pass, read outside its clock
    measured_until_epoch_s: float | None = None
    # The measured clock's own reads (time.perf_counter_ns: CLOCK_MONOTONIC on Linux, one clock for every process
    # of the machine), so the span of several lanes is taken from the clocks themselves.
    clock_started_ns: int | None = None
    clock_stopped_ns: int | None = None
    memory_peaks: dict[str, float] = field(default_factory=dict)  # metric name -> bytes, from memory_counter
    memory_counter: str = ""
    metrics: dict[str, float] = field(default_factory=dict)
    missing_measurements: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    peak: dict = field(default_factory=dict)  # the cached device peak MFU was computed against
    device_facts: dict = field(default_factory=dict)
    lanes: list[dict] = field(default_factory=list)  # a lanes pass: each lane's own outcome (execution/lanes.py)

    @property
    def completed(self) -> bool:
        return self.status == Status.COMPLETED

    def merge(self, found: dict) -> None:
        """Add a part's metrics, missing measurements and tags to the outcome's own; its other fields replace them."""
        known = {f.name for f in fields(self)}
        for key, value in found.items():
            if key not in known:
                raise TypeError(f"PassOutcome has no field {key!r}")
            setattr(self, key, {**getattr(self, key), **value} if key in MERGED else value)

    def timings(self, names: tuple[str, ...]) -> dict[str, float]:
        """The named stage timings this outcome has (a stage that did not run is absent, never 0)."""
        return {name: getattr(self, name) for name in names if getattr(self, name, None) is not None}

    def write(self, workdir: Path) -> None:
        (workdir / OUTCOME).write_text(json.dumps(asdict(self), indent=2), encoding="utf-8")

    @classmethod
    def read(cls, workdir: Path) -> PassOutcome | None:
        """The outcome the child wrote in its work folder, or None if it wrote none."""
        path = workdir / OUTCOME
        if not path.exists():
            return None
        return cls(**json.loads(path.read_text(encoding="utf-8")))


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
