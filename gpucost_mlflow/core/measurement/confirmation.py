"""Whether a choice holds beyond the five short passes it was picked from (pure rules; docs/costs.md, "Confirmation").

`gpucost confirm` runs the chosen configuration on a disjoint confirmation corpus, its clock repeating the corpus for
at least the protocol's `confirmation.min_s`, judged by the same bars. The choice is confirmed when quality held and
the rate over that whole run stayed within the configuration's measured spread or above it: at least the slowest
benchmark pass's inputs per second, the rate its committed plan is sized at. Slower than that, the plan committed at
the slowest pass would not cover the work, and the choice is not confirmed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpucost_mlflow.core.judging.status import Status

CONFIRMED = "confirmed"
NOT_CONFIRMED = "not confirmed"
NOT_YET = "not yet confirmed"


@dataclass(frozen=True)
class ConfirmationRun:
    """One confirmation run of a configuration as recorded: its verdict, inputs, one corpus's seconds (the mean over
    its repetitions) and the clock's whole span."""

    run_id: str
    status: str
    reason: str
    inputs: int | None
    pass_s: float | None
    measured_s: float | None


@dataclass(frozen=True)
class Confirmation:
    """A configuration's confirmation verdict, the figures it rests on in words, and the run it read."""

    verdict: str
    figures: str
    run_id: str = ""

    @property
    def holds(self) -> bool:
        return self.verdict == CONFIRMED

    @property
    def failed(self) -> bool:
        return self.verdict == NOT_CONFIRMED


def _number(rate: float) -> str:
    """A rate with the digits it has: 90.9, 1,234.5, 0.0188."""
    return f"{rate:,.1f}" if rate >= 1 else f"{rate:.3g}"


def confirm(durations: Sequence[float], inputs_per_pass: int, runs: Sequence[ConfirmationRun],
            min_s: float) -> Confirmation:
    """The verdict of the latest confirmation run against the benchmark passes' durations (one corpus of
    inputs_per_pass inputs each); 'not yet confirmed' without a judged run. An accepted run shorter than min_s is not
    a confirmation: it gave the reference's outputs on the confirmation corpus for another configuration's judging."""
    runs = [r for r in runs if not (r.status == Status.ACCEPTED and r.measured_s is not None and r.measured_s < min_s)]
    if not runs:
        return Confirmation(NOT_YET, "no confirmation run yet")
    run = runs[-1]
    if run.status in (Status.PENDING, Status.RUNNING):
        return Confirmation(NOT_YET, f"its confirmation run is {run.status} ({run.reason})", run.run_id)
    if run.status != Status.ACCEPTED:
        return Confirmation(NOT_CONFIRMED, f"quality did not hold: {run.status} ({run.reason})", run.run_id)
    if not run.inputs or not run.pass_s or run.measured_s is None:
        return Confirmation(NOT_CONFIRMED, "the confirmation run recorded no rate", run.run_id)
    if not durations:
        return Confirmation(NOT_YET, "no benchmark duration to compare its rate with", run.run_id)
    held = run.inputs / run.pass_s
    slowest, fastest = inputs_per_pass / max(durations), inputs_per_pass / min(durations)
    spread = f"benchmark passes {_number(slowest)}-{_number(fastest)} inputs/s"
    over = f"{_number(held)} inputs/s over {run.measured_s:,.0f} s on {run.inputs:,} confirmation inputs"
    if held < slowest:
        return Confirmation(NOT_CONFIRMED, f"{over}, below the slowest benchmark pass ({spread}); quality held",
                            run.run_id)
    return Confirmation(CONFIRMED, f"{over} ({spread}); quality held", run.run_id)
