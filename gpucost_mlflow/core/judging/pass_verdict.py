"""A pass's verdict as one frozen record: its status, reason and checks, the ids and quality behind them, the
reference and audit, and what was not measured and why. Its recorded form is the pass's verdict.json; a re-judge
(tracking/rejudge.py) reads it back with `from_record` and records the new verdict with the first kept beside it.
Pure: no torch, no mlflow.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.judging.verdicts import Check
from gpucost_mlflow.core.records import Record

FIRST_KEYS = ("status", "reason", "quality_verdict", "checks")  # what a re-judged verdict keeps of the first


@dataclass(frozen=True)
class PassVerdict(Record):
    """verdict.json: a field a verdict recorded by an earlier version lacks reads as its default."""

    status: str = ""
    reason: str = ""
    checks: tuple[Check, ...] = ()
    ids: dict = field(default_factory=dict)
    quality: dict = field(default_factory=dict)
    quality_verdict: str = ""
    reference: dict = field(default_factory=dict)
    gold_labels: bool = True
    correct_ids: list | None = None  # the ids labelled as gold, where gold labels exist (flips count from them)
    scored: dict | None = None  # the inputs' gold labels and buckets, so a re-judge resamples them without the corpus
    audit: dict = field(default_factory=dict)
    protocol_digest: str = ""
    missing_measurements: dict = field(default_factory=dict)
    memory_counter: str = ""
    deterministic: dict = field(default_factory=dict)
    device_facts: dict = field(default_factory=dict)
    lanes: list | None = None  # a lanes pass: each lane's own outcome
    rejudged: dict | None = None  # a verdict made again: when, and against which reference run
    first: dict | None = None  # ... and what the first verdict said

    DERIVED = ("corpus_accepted",)
    OPTIONAL = ("correct_ids", "scored", "lanes", "rejudged", "first")  # absent rather than empty, as verdicts were

    @property
    def corpus_accepted(self) -> bool:
        return self.status == Status.ACCEPTED

    def omitted(self, field) -> bool:
        return field.name in self.OPTIONAL and not getattr(self, field.name)

    def rejudged_as(self, status: str, reason: str, quality_verdict: str, checks: list[Check], comparison: dict,
                    at: str, against: str) -> PassVerdict:
        """The verdict made again against a reference run, the first verdict's status, reason and checks kept."""
        first = self.record()
        return replace(self, status=status, reason=reason, quality_verdict=quality_verdict, checks=tuple(checks),
                       reference=comparison, rejudged={"at": at, "against": against},
                       first={key: first.get(key) for key in FIRST_KEYS})
