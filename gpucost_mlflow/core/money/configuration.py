"""One allowed configuration as measured, a variant on a device with its attempts' figures, and an attempt excluded
from it for a documented cause (`core/money/decision.py` assesses it under the protocol's rules)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpucost_mlflow.core.inputs.identity import Identity
from gpucost_mlflow.core.judging.status import JUDGED, Status
from gpucost_mlflow.core.measurement.stats import Durations, too_short
from gpucost_mlflow.core.measurement.timeline import Span


@dataclass(frozen=True)
class ExcludedPass:
    """An attempt excluded for a documented cause, with what it was before: the decision checks it changed nothing."""

    run_id: str
    status_before: str
    pass_s: float | None
    cause: str


@dataclass
class Configuration:
    """One allowed configuration as measured: a variant on a device, with its attempts' figures and its attempts."""

    device: str
    variant: str
    statuses: list[str]
    durations: Durations
    medians: dict  # load_s, warmup_s, eval_s, export_s medians over completed passes
    accepted_deliverables: int = 0
    attempt_spans: tuple[Span, ...] = ()  # every benchmark attempt on this device: its run, start to end, on its host
    walls_estimated: int = 0  # of those, attempts with no end time, counted by their recorded stage times
    gpus: int = 1  # GPUs one pass uses (its parallelism is inside the measured pass_s)
    identity: Identity | None = None  # what makes it this configuration (PROTOCOL.md §2); None when built by hand
    distinction: str = ""  # what sets it apart from other configurations of the same variant and device
    pass_runs: tuple[str, ...] = ()  # the run id of each duration, in the same order
    pass_causes: tuple[str, ...] = ()  # what was seen beside each duration (another pass at the same time), or ''
    excluded: tuple[ExcludedPass, ...] = ()
    output_tokens_per_input: float | None = None  # median over accepted passes (generation); None for other outputs
    seeds_missing: str = ""  # each declared seed whose own passes are missing or not feasible (core/judging/seeds.py)
    input_tokens_per_input: float | None = None  # median over accepted passes: the tokens an endpoint bills as input
    measured_s: tuple[float, ...] = ()  # each counted pass's measured clock (its repetitions' total), in order
    # each counted pass's steady lap (the median of its laps after the first), in order; for a pass recorded before
    # steady laps its pass_s over the whole measured clock: what separation reads
    timed_s: tuple[float, ...] = ()
    not_shown: tuple[str, ...] = ()  # each rejected pass whose quality bar was not shown: why (its interval, the
    # inputs that would show it), core/judging/bounds.py
    setup_in_rate: int = 0  # counted passes recorded before steady laps: their duration includes each shape's setup
    stopped: str = ""  # why the protocol's race stopped measuring it (core/campaign/race.py), '' when it did not
    # its benchmark attempts as read, in order (tracking/recorded.py `Attempt`, which core never imports): what its
    # figures were made of, read here by the report; () when built by hand
    attempts: tuple = field(default=(), repr=False, compare=False)

    @property
    def separated_on(self) -> tuple[float, ...]:
        """The durations two configurations are separated on: each pass's time over its whole measured clock, never a
        single lap of a repeated corpus (a sub-second lap is as noisy as a sub-second pass); its one-corpus durations
        where none were given (a configuration built by hand). Stability and the slowest pass read one corpus each."""
        return self.timed_s or self.durations.values

    @property
    def too_short(self) -> str:
        """Why its durations cannot be read against another's: the shortest measured clock of its counted passes
        under the floor ('too short to time reliably (0.942 s < 1 s)'); '' when each ran long enough."""
        return too_short(min(self.measured_s)) if self.measured_s else ""

    @property
    def label(self) -> str:
        """The variant, with what sets this configuration apart when the variant has several on the device."""
        return self.variant + (f" [{self.distinction}]" if self.distinction else "")

    @property
    def name(self) -> str:
        return f"{self.label} on {self.device}"

    @property
    def counts(self) -> dict[str, int]:
        return {s: self.statuses.count(s)
                for s in (Status.ACCEPTED, Status.REJECTED, Status.FAILED, Status.INTERRUPTED, Status.EXCLUDED,
                          Status.PENDING, Status.RUNNING)}

    def restored(self, excluded: ExcludedPass) -> Configuration:
        """The configuration as it would stand had this exclusion never been made."""
        statuses = list(self.statuses)
        statuses.remove(Status.EXCLUDED)
        statuses.append(excluded.status_before or Status.FAILED)
        counted = excluded.pass_s is not None and excluded.status_before in JUDGED
        return replace(self, statuses=statuses, excluded=tuple(x for x in self.excluded if x != excluded),
                       durations=Durations(self.durations.values + ((excluded.pass_s,) if counted else ())),
                       timed_s=self.timed_s + ((excluded.pass_s,) if counted and self.timed_s else ()),
                       pass_runs=self.pass_runs + ((excluded.run_id,) if counted else ()),
                       pass_causes=self.pass_causes + (("",) if counted else ()))
