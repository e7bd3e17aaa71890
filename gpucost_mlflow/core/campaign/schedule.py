"""The campaign schedule: every variant once per round, the order rotated by one each round."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gpucost_mlflow.core.judging.status import interrupted
from gpucost_mlflow.core.records import Record


@dataclass(frozen=True)
class Slot(Record):
    """One scheduled pass: its round (from 1), position in the round (from 1) and overall index (from 1)."""

    index: int
    round: int
    position: int
    variant: str
    seed: int | None = None  # the protocol's seed this pass runs with (None: the protocol declares no seeds)

    @property
    def key(self) -> str:
        return f"{self.round}-{self.position}"


def rotated(variants: Sequence[str], passes: int, seeds: Sequence[int] = ()) -> list[Slot]:
    """Round r runs the variants shifted by r-1: 1-4-8, 4-8-1, 8-1-4, 1-4-8, ...; under a protocol's seeds every
    variant at every seed, the pairs rotated alike, so each seed gets the protocol's passes in rotated order."""
    if not variants:
        raise ValueError("a campaign needs at least one variant")
    units = [(variant, seed) for seed in seeds for variant in variants] if seeds else [(v, None) for v in variants]
    slots = []
    for round_ in range(1, passes + 1):
        shift = (round_ - 1) % len(units)
        order = units[shift:] + units[:shift]
        for position, (variant, seed) in enumerate(order, start=1):
            slots.append(Slot(len(slots) + 1, round_, position, variant, seed))
    return slots


@dataclass(frozen=True)
class SlotState:
    """What the tracking store holds for one slot."""

    attempts: int
    needs_run: bool
    retry_of: str = ""


def remaining(slots: Iterable[Slot], attempts: dict[str, list[dict]]) -> list[tuple[Slot, SlotState]]:
    """Slots still to run on resume: those with no attempt, and those whose last attempt was interrupted.

    An attempt that ended for another reason (accepted, rejected, pending, failed by OOM or error)
    is the slot's result: it is never re-run, so nothing is silently retried.
    """
    todo = []
    for slot in slots:
        rows = attempts.get(slot.key, [])
        if not rows:
            todo.append((slot, SlotState(0, True)))
        elif interrupted(rows[-1]["status"], rows[-1]["reason"]):
            todo.append((slot, SlotState(len(rows), True, rows[-1]["run_id"])))
    return todo
