"""Whether a choice holds beyond the five short passes it was picked from (pure rules; docs/costs.md, "Confirmation").

`gpucost confirm` runs the chosen configuration on a disjoint confirmation corpus, its clock repeating the corpus for
at least the protocol's `confirmation.min_s`, judged by the same bars. A run holds when quality held and the rate over
that whole run stayed within the configuration's measured spread or above it: at least the slowest benchmark pass's
rate, the rate its committed plan is sized at. Slower than that, the plan committed at the slowest pass would not cover
the work. The rate is counted in real tokens per second where both sides recorded their tokens: the confirmation
corpus holds other texts, so the same per-token speed gives another rate in inputs, and inputs per second elsewhere.

Every confirmation run counts, whoever started it (`gpucost confirm` or `gpucost pass --role confirmation` by hand):
the choice is confirmed only when every one of its runs held, so a run that did not hold is never retried away by a
later one. Only three kinds of run are listed without being counted: one excluded by `gpucost exclude` for its
documented cause, one interrupted before any result (its launcher stopped: no rate, no verdict), and one tagged as the
reference's outputs on the confirmation corpus (`gpucost confirm` runs the reference variant there for another
configuration to be judged against, whatever its clock; recorded before that tag, an accepted run shorter than
`confirmation.min_s`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpucost_mlflow.core.judging.status import Status, interrupted
from gpucost_mlflow.core.names import STEADY_LAP

CONFIRMED = "confirmed"
NOT_CONFIRMED = "not confirmed"
NOT_YET = "not yet confirmed"
EXCLUDED = "excluded"  # a run's outcome: set aside by `gpucost exclude` for its documented cause
NOT_COUNTED = "not counted"  # a run's outcome: interrupted before a result, or the reference's outputs only
COUNTED = (CONFIRMED, NOT_CONFIRMED, NOT_YET)


@dataclass(frozen=True)
class ConfirmationRun:
    """One confirmation run of a configuration as recorded: its verdict, inputs, one corpus's seconds (its steady
    lap; before steady laps, the mean over its repetitions), the clock's whole span and how many times it processed
    the corpus."""

    run_id: str
    status: str
    reason: str
    inputs: int | None
    pass_s: float | None
    measured_s: float | None
    repetitions: int | None = None
    tokens: float | None = None  # the real (unpadded) input tokens of one corpus (tokens_input), where counted
    reference_outputs: bool = False  # tagged by `gpucost confirm` as the reference's outputs: compared against only


@dataclass(frozen=True)
class RunOutcome:
    """What one confirmation run says: confirmed, not confirmed, not yet, excluded or not counted, with its figures
    and its rate (in unit: tokens or inputs per second) where it recorded one."""

    run_id: str
    outcome: str
    figures: str
    rate: float | None = None
    measured_s: float | None = None  # the seconds its clock ran, where it gave a rate
    slowest: float | None = None  # the slowest benchmark pass's rate it was compared with, in the same unit
    unit: str = "inputs/s"

    @property
    def against_slowest(self) -> float | None:
        """Its rate over the slowest benchmark pass's (1.05: 5 % faster; under 1: it did not hold), where it has
        both."""
        return self.rate / self.slowest if self.rate and self.slowest else None

    @property
    def counted(self) -> bool:
        return self.outcome in COUNTED


@dataclass(frozen=True)
class Confirmation:
    """A configuration's confirmation verdict, the figures it rests on in words, the run it names, and every
    confirmation run of the configuration with its outcome, oldest first."""

    verdict: str
    figures: str
    run_id: str = ""
    runs: tuple[RunOutcome, ...] = ()

    @property
    def timed_s(self) -> float:
        """The seconds its counted runs timed, all together: how long the rate was seen to hold."""
        return sum(o.measured_s or 0.0 for o in self.runs if o.counted)

    @property
    def holds(self) -> bool:
        return self.verdict == CONFIRMED

    @property
    def failed(self) -> bool:
        return self.verdict == NOT_CONFIRMED


def _number(rate: float) -> str:
    """A rate with the digits it has: 10,341, 90.9, 0.0188."""
    if rate >= 1000:
        return f"{rate:,.0f}"
    return f"{rate:,.1f}" if rate >= 1 else f"{rate:.3g}"


def timed(run: ConfirmationRun) -> str:
    """What the run's clock held, in words: '21 repetitions of 1,000 confirmation inputs in 31 s' (the count from
    the clock's span over one corpus's seconds where the run recorded none)."""
    count = run.repetitions
    if not count:
        count = max(1, round(run.measured_s / run.pass_s)) if run.pass_s and run.measured_s else 1
    seconds = f"{run.measured_s:,.0f}" if run.measured_s >= 10 else f"{run.measured_s:.1f}"
    return f"{count:,} repetition{'' if count == 1 else 's'} of {run.inputs:,} confirmation inputs in {seconds} s"


def outcome(run: ConfirmationRun, durations: Sequence[float], inputs_per_pass: int, min_s: float,
            tokens_per_pass: float | None = None) -> RunOutcome:
    """One run's outcome against the benchmark passes' durations (one corpus of inputs_per_pass inputs, and of
    tokens_per_pass real tokens where they were counted, each)."""
    if run.status == Status.EXCLUDED:
        return RunOutcome(run.run_id, EXCLUDED, run.reason or "no cause recorded")
    if interrupted(run.status, run.reason):
        return RunOutcome(run.run_id, NOT_COUNTED, f"{run.reason}: stopped before any rate or verdict")
    if run.reference_outputs:
        return RunOutcome(run.run_id, NOT_COUNTED, f"{run.status}, tagged as the reference's outputs on the "
                                                   "confirmation corpus: compared against, not a confirmation")
    if run.status == Status.ACCEPTED and run.measured_s is not None and run.measured_s < min_s:
        clock = f"{run.measured_s:,.1f}" if run.measured_s >= 1 else f"{run.measured_s:.3f}"
        return RunOutcome(run.run_id, NOT_COUNTED, f"accepted, its clock {clock} s, under confirmation.min_s "
                                                   f"({min_s:g} s): the reference's outputs, not a confirmation")
    if run.status in (Status.PENDING, Status.RUNNING):
        return RunOutcome(run.run_id, NOT_YET, f"its confirmation run is {run.status} ({run.reason})")
    if run.status != Status.ACCEPTED:
        return RunOutcome(run.run_id, NOT_CONFIRMED, f"quality did not hold: {run.status} ({run.reason})")
    if not run.inputs or not run.pass_s or run.measured_s is None:
        return RunOutcome(run.run_id, NOT_CONFIRMED, "the confirmation run recorded no rate")
    if not durations:
        return RunOutcome(run.run_id, NOT_YET, "no benchmark duration to compare its rate with")
    per_token = bool(run.tokens and tokens_per_pass)
    unit = "tokens/s" if per_token else "inputs/s"
    run_work, pass_work = (run.tokens, tokens_per_pass) if per_token else (run.inputs, inputs_per_pass)
    held = run_work / run.pass_s
    slowest, fastest = pass_work / max(durations), pass_work / min(durations)
    spread = f"benchmark {STEADY_LAP}s {_number(slowest)}-{_number(fastest)} {unit}"
    inputs = f" ({_number(run.inputs / run.pass_s)} inputs/s)" if per_token else ""
    over = f"{_number(held)} {unit}{inputs}: {timed(run)}"
    if held < slowest:
        return RunOutcome(run.run_id, NOT_CONFIRMED, f"{over}, below the slowest benchmark pass ({spread}); quality "
                                                     "held", held, run.measured_s, slowest, unit)
    return RunOutcome(run.run_id, CONFIRMED, f"{over} ({spread}); quality held", held, run.measured_s, slowest, unit)


def _set_aside(outcomes: Sequence[RunOutcome]) -> str:
    """How many runs are listed without being counted, said after the figures; '' when none."""
    excluded = sum(1 for o in outcomes if o.outcome == EXCLUDED)
    other = sum(1 for o in outcomes if o.outcome == NOT_COUNTED)
    said = [f"{excluded} run{'' if excluded == 1 else 's'} excluded" if excluded else "",
            f"{other} not counted" if other else ""]
    return f"; {', '.join(s for s in said if s)} (each listed under Confirmation)" if excluded or other else ""


def confirm(durations: Sequence[float], inputs_per_pass: int, runs: Sequence[ConfirmationRun],
            min_s: float, tokens_per_pass: float | None = None) -> Confirmation:
    """The verdict over every confirmation run (oldest first): not confirmed when any counted run did not hold, not
    yet while one waits or none was counted, confirmed when every counted run held (its figures: the slowest)."""
    outcomes = tuple(outcome(run, durations, inputs_per_pass, min_s, tokens_per_pass) for run in runs)
    counted = [o for o in outcomes if o.counted]
    aside = _set_aside(outcomes)
    if not counted:
        return Confirmation(NOT_YET, f"no confirmation run yet{aside}", "", outcomes)
    failed = [o for o in counted if o.outcome == NOT_CONFIRMED]
    if failed:
        tally = f"; {len(failed)} of {len(counted)} confirmation runs did not hold" if len(counted) > 1 else ""
        return Confirmation(NOT_CONFIRMED, f"{failed[0].figures}{tally}{aside}", failed[0].run_id, outcomes)
    waiting = [o for o in counted if o.outcome == NOT_YET]
    if waiting:
        return Confirmation(NOT_YET, f"{waiting[0].figures}{aside}", waiting[0].run_id, outcomes)
    slowest = min(counted, key=lambda o: o.against_slowest or 0.0)
    tally = f"; all {len(counted)} confirmation runs held, the slowest shown" if len(counted) > 1 else ""
    return Confirmation(CONFIRMED, f"{slowest.figures}{tally}{aside}", slowest.run_id, outcomes)
