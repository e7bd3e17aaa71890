"""The pre-registered second stage (PROTOCOL.md §6: "add repetitions under one protocol"): how many more passes the
undecided configurations get, each the same, up to what the separation test's estimate asks and never beyond the
protocol's `settle.max_passes_per_variant`. The decision is read once, when the stage has run, never round by round.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.measurement.stats import repetitions_needed

STAGE = "settle"  # the campaign stage tag of a second stage's campaign and passes


@dataclass(frozen=True)
class SecondStage:
    """The variants to run again, how many more passes each, and the figures behind that count."""

    variants: tuple[str, ...]
    more: int  # passes per variant this stage adds: rounds of the rotated schedule (0: nothing to run, see `why`)
    target: int  # passes per configuration once it has run
    needed: int | None  # the separation test's estimate
    ceiling: int  # settle.max_passes_per_variant
    why: str = ""  # why more passes cannot help, when more is 0

    def line(self) -> str:
        if not self.more:
            return f"nothing to settle: {self.why}; nothing run"
        capped = f", capped by the protocol's {self.ceiling}" if self.needed > self.ceiling else ""
        return (f"second stage: {self.more} more pass(es) each of {', '.join(self.variants)}, to {self.target} per "
                f"configuration (the separation test's estimate {self.needed}{capped}); the decision is read once, "
                "when the stage has run")


def second_stage(undecided: Sequence[tuple[str, Sequence[float]]], ceiling: int | None, confidence: float) -> SecondStage:
    """The stage for the undecided configurations, each (variant, its durations so far): the most passes any pair
    needs, within the ceiling (none, with why, when more passes cannot help); a one-line error when the protocol
    declares no second stage."""
    names = [name for name, _ in undecided]
    if ceiling is None:
        raise GpucostError("the protocol declares no second stage (settle: {max_passes_per_variant: N}, part of its "
                           "locked digest): more passes under it would be peeking; declare it in a new protocol and "
                           "experiment")
    if len(set(names)) != len(names):
        raise GpucostError(f"the undecided configurations share a variant name ({', '.join(names)}): they differ in "
                           "device or stack, and one campaign on this machine cannot run each of them")
    first = undecided[0][1]
    estimates = [repetitions_needed(first, other, confidence) for _, other in undecided[1:]]
    done = max(len(durations) for _, durations in undecided)
    if not any(estimates):
        return SecondStage(tuple(names), 0, done, None, ceiling,
                           f"no median difference between {', '.join(names)}: more passes are unlikely to separate them")
    needed = max(e for e in estimates if e)
    target = min(needed, ceiling)
    if target <= done:
        return SecondStage(tuple(names), 0, done, needed, ceiling,
                           f"{', '.join(names)} already have {done} passes, the most the protocol's "
                           f"settle.max_passes_per_variant ({ceiling}) allows or the estimate ({needed}) asks")
    return SecondStage(tuple(names), target - done, target, needed, ceiling)
