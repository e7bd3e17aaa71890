"""A pass read back as it was written (`Recorded`: its place, the kind's settings, its configuration's identity, its
tokenizer, corpus order and warm-up, its run's times, its verdict with its checks, its facts, and its metrics, the one
open part), and an attempt: that record with its status as read (`Attempt`). The attempts table is a view of attempts
(`Attempt.row`, the columns of tracking/attempts_table.py). No MLflow here: tracking/reader.py reads runs into these.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

import pandas as pd

from gpucost_mlflow.core.inputs.identity import Identity
from gpucost_mlflow.core.inputs.manifest import Warmup
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.judging.verdicts import Check
from gpucost_mlflow.core.kinds.settings import Settings

TABLE_SETTINGS = ("batch_size", "precision", "quantization", "length_grouping")  # the settings the table shows


def _empty() -> Mapping:
    return MappingProxyType({})


@dataclass(frozen=True)
class Place:
    """Where a pass ran: its campaign, pass index, round, position and attempt (as recorded: text, '' when not), its
    role, its stage and the stage's plan, its host and backend, and its `gpucost.confirmation` mark (a confirmation
    run's verdict as the latest decision wrote it, or 'reference outputs': compared against, never counted)."""

    campaign_id: str = ""
    pass_index: str = ""
    round: str = ""
    position: str = ""
    attempt: str = ""
    role: str = ""
    stage: str = ""
    settle_plan: str = ""
    host: str = ""
    backend: str = ""
    confirmation: str = ""


@dataclass(frozen=True)
class RunTimes:
    """The run's start and end (milliseconds since the epoch, as MLflow keeps them; None when not recorded)."""

    start_ms: int | None = None
    end_ms: int | None = None

    @property
    def wall_s(self) -> float | None:
        """The run's measured wall time (start, load, warm-up, pass, evaluation, export): what it held the rental."""
        return (self.end_ms - self.start_ms) / 1000 if self.end_ms and self.start_ms else None

    @property
    def start(self) -> pd.Timestamp:
        return pd.Timestamp(self.start_ms, unit="ms", tz="UTC") if self.start_ms is not None else pd.NaT

    @property
    def end(self) -> pd.Timestamp | None:
        return pd.Timestamp(self.end_ms, unit="ms", tz="UTC") if self.end_ms else None


@dataclass(frozen=True)
class RecordedVerdict:
    """The verdict as the pass's tags hold it: its quality verdict, its checks (from the checks line: no reasons,
    those stay in verdict.json; none on passes before it), and what they say of the ids and the reference."""

    quality_verdict: str = ""
    checks: tuple[Check, ...] = ()
    ids_match: bool = False
    against_reference: bool = False
    corpus_accepted: bool = True  # the retired tag's word on passes that carry it


@dataclass(frozen=True)
class Facts:
    """What the pass recorded once of how it ran: its protocol, memory counter, flags (contended, throttled, starved,
    cold shapes: the text of each, '' when not raised), and the race's stop recorded on it."""

    protocol_digest: str = ""
    memory_counter: str = ""
    contended: str = ""
    throttled: str = ""
    starved: str = ""
    cold_shapes: str = ""
    stopped: str = ""


@dataclass(frozen=True)
class Recorded:
    """One pass as written: `settings` is the kind's record where the params hold a whole one (`recorded_settings`:
    what they hold, typed, on any pass); its tokenizer's revision, its corpus's order digest and its warm-up as its
    params hold them (tracking/schema.py `params_from_manifest`; '' and None where not recorded); `metrics` the
    pass's metrics by name (a missing one is absent)."""

    run_id: str
    identity: Identity
    place: Place = Place()
    settings: Settings | None = None
    recorded_settings: Mapping[str, Any] = field(default_factory=_empty)
    tokenizer_revision: str = ""
    corpus_order: str = ""
    warmup: Warmup = field(default_factory=Warmup)
    timings: RunTimes = RunTimes()
    verdict: RecordedVerdict = RecordedVerdict()
    facts: Facts = Facts()
    metrics: Mapping[str, float] = field(default_factory=_empty)

    @property
    def role(self) -> str:
        return self.place.role

    @property
    def batch_size(self) -> int | None:
        """The batch size it ran (None when not recorded, or not a whole number)."""
        value = self.settings.batch_size if self.settings else self.recorded_settings.get(TABLE_SETTINGS[0])
        return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Attempt(Recorded):
    """A recorded pass with its status as read (a run left running may read as failed, an excluded one says its
    exclusion), what it was before an exclusion, why an energy or MFU figure is empty, the passes its measured clock
    overlapped on its host, its configuration's race stop in its campaign, and the notes its table row shows."""

    status: str = ""
    reason: str = ""
    status_before_exclusion: str = ""
    energy_reason: str = ""
    mfu_reason: str = ""
    overlapped_with: str = ""
    stopped: str = ""
    notes: str = ""

    @property
    def corpus_accepted(self) -> bool:
        """Whether its corpus was accepted: its status says it (passes recorded before carried the tag too)."""
        return self.status == Status.ACCEPTED and self.verdict.corpus_accepted

    def metric(self, name: str) -> float | None:
        """One metric's value, None when the pass did not record it."""
        return self.metrics.get(name)

    @cached_property
    def row(self) -> Mapping[str, Any]:
        """Its row of the attempts table (read-only), derived from the record."""
        from gpucost_mlflow.tracking.attempts_table import row_of  # a cycle: the table imports this module

        return MappingProxyType(row_of(self))
