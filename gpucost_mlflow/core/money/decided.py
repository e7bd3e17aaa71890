"""The decision as one frozen value: the assessments, the one choice made of them (once the second stage and the
confirmations are read), the note, the doubt of an undecided choice, the break-evens between devices, each
configuration's committed cost against volume and the chosen one's nearest break-evens. Made once (report/deciding.py)
and read by every writer of the report and by the decision run, which never decide again."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from types import MappingProxyType

from gpucost_mlflow.core.measurement.confirmation import NOT_CONFIRMED, Confirmation
from gpucost_mlflow.core.measurement.stats import DEFAULT_CONFIDENCE, repetitions_needed, separate
from gpucost_mlflow.core.money.breakeven import MAX_VOLUME, BreakEven, Priced, break_even
from gpucost_mlflow.core.money.choice import Choice, Doubt, break_evens, doubt
from gpucost_mlflow.core.money.curve import Step, priced, steps
from gpucost_mlflow.core.money.decision import Assessment, unpriced

VOLUME_SPAN = 10  # the curves run to ten times the declared volume (further when a break-even lies beyond)


@dataclass(frozen=True)
class Flips:
    """Where the chosen configuration stops being the cheapest around the declared volume: the nearest volume
    below which another one costs less, the nearest from which another one does, how far the order was searched
    (where both meet the deadline), and the largest volume at which the chosen one meets the deadline itself."""

    below: tuple[int, Assessment] | None = None  # up to this volume the other costs less
    above: tuple[int, Assessment] | None = None  # from this volume the other costs less
    searched_to: int | None = None
    reach: int | None = None  # None: no deadline (or no forecast)


@dataclass(frozen=True)
class Curve:
    """One configuration's committed cost against volume (core/money/curve.py) up to the volume the report shows it
    to; its steps are worked out when first read, once (a report read for its tables never pays for them)."""

    priced: Priced
    span: int

    def cost(self, volume: int) -> Decimal:
        return self.priced.cost(volume)

    def reach_within(self, hours: float) -> int | None:
        """The largest volume whose slowest-pass forecast fits in `hours` (a start other than the declared one)."""
        return replace(self.priced, deadline_h=hours).deadline_reach()

    @functools.cached_property
    def steps(self) -> tuple[Step, ...]:
        return tuple(steps(self.priced, 1, self.span))


@dataclass(frozen=True)
class Settling:
    """What would separate the fastest undecided configuration from another that it does not separate from: nothing
    more passes could (`too_short`: a counted pass's measured clock under the floor), or about `needed` passes per
    configuration (None: their medians do not differ)."""

    first: Assessment
    other: Assessment
    too_short: bool = False
    needed: int | None = None


def settling(group: list[Assessment]) -> tuple[Settling, ...]:
    """For an undecided group (its fastest first), what would separate the first from each other one it does not
    separate from, at the protocol's confidence as its rules carry it."""
    if not group:
        return ()
    first = group[0].configuration
    confidence = group[0].rules.confidence if group[0].rules else DEFAULT_CONFIDENCE
    found = []
    for other in group[1:]:
        mine, theirs = first, other.configuration
        if separate(mine.name, mine.separated_on, theirs.name, theirs.separated_on, confidence=confidence,
                    too_short_to_time=(mine.too_short, theirs.too_short)).decided:
            continue
        short = bool(mine.too_short or theirs.too_short)
        found.append(Settling(group[0], other, short, None if short else
                              repetitions_needed(mine.separated_on, theirs.separated_on, confidence)))
    return tuple(found)


@dataclass(frozen=True)
class Decision:
    """What the report decided, as one value: every configuration assessed (`shown`: as the tables show each, no
    price where one is withheld), the choice, the note, the chosen configurations' confirmations by name, the latest
    second stage (core/campaign/settle.StagePlan, or None), and what follows from them, computed once: the doubt of
    an undecided choice and what would settle it (`settling`), the break-evens between devices, each assessment's
    curve (None: not priced), the declared volume, the chosen one's nearest break-evens (`flips`) and the points they
    mark on its curve (`marks`)."""

    assessments: tuple[Assessment, ...]
    choice: Choice
    note: str = ""
    confirmations: Mapping[str, Confirmation] = field(default_factory=lambda: MappingProxyType({}))
    stage: object = None
    shown: tuple[Assessment, ...] = ()
    doubt: Doubt | None = None
    break_evens: tuple[BreakEven, ...] = ()
    curves: tuple[Curve | None, ...] = ()
    volume: int | None = None
    flips: Flips | None = None
    marks: tuple[tuple[int, Decimal], ...] = ()
    settling: tuple[Settling, ...] = ()

    @functools.cached_property
    def _positions(self) -> dict[int, int]:
        return {id(a): i for i, a in enumerate(self.assessments)}

    def curve(self, a: Assessment) -> Curve | None:
        """The assessment's committed cost against volume (None: no forecast or no covering plan)."""
        at = self._positions.get(id(a))
        return self.curves[at] if at is not None and self.curves else None

    def shown_of(self, a: Assessment) -> Assessment:
        """The assessment as the tables, balance.csv and the decision run show it: no price where one is withheld."""
        at = self._positions.get(id(a))
        return self.shown[at] if at is not None else shown(a, self.choice)

    def withheld(self, a: Assessment) -> str:
        return withheld(a, self.choice)


def _among(a: Assessment, group: list[Assessment]) -> bool:
    return any(a is other for other in group)


def withheld(a: Assessment, choice: Choice) -> str:
    """Why no committed price of this configuration is shown in any table, figure, tag or description ('' when it
    is): infeasible, under-sampled, quality not shown, unstable, late (`Assessment.withheld`) or not confirmed. The
    configurations the decision weighs (chosen, tied, undecided, the other timely ones) keep theirs."""
    if _among(a, choice.chosen + choice.undecided + choice.others):
        return ""
    if _among(a, choice.unconfirmed):
        return f"{NOT_CONFIRMED}: the choice did not hold on the confirmation run"
    return a.withheld


def shown(a: Assessment, choice: Choice) -> Assessment:
    """The assessment without a plan or a price where one is withheld, the reason in its place
    (core/money/decision.py, `unpriced`)."""
    reason = withheld(a, choice)
    return unpriced(a, reason) if reason else a


def _flips(chosen: Assessment, others: list[Assessment], at: int,
           curve: Callable[[Assessment], Priced | None]) -> Flips:
    """The nearest break-evens of the chosen configuration against any of the others (core/money/breakeven.py,
    compared only where both meet the deadline), and where the chosen one stops meeting the deadline."""
    mine = curve(chosen)
    if mine is None:
        return Flips()
    by_name = {a.configuration.name: a for a in others}
    found = [break_even(mine, theirs, at) for other in others
             if (theirs := curve(other)) is not None and other is not chosen]
    below = max(((b.flip_below[0], by_name[b.flip_below[1]]) for b in found
                 if b.flip_below and b.flip_below[1] in by_name), key=lambda f: f[0], default=None)
    above = min(((b.flip_above[0], by_name[b.flip_above[1]]) for b in found
                 if b.flip_above and b.flip_above[1] in by_name), key=lambda f: f[0], default=None)
    searched = max((b.searched_to for b in found), default=None)
    return Flips(below, above, searched, mine.deadline_reach())


def _span(volume: int, found: Flips | None) -> int:
    """Where the volume axis ends: ten times the declared volume, or past the nearest break-even above it."""
    furthest = max(volume, found.above[0] if found and found.above else 0)
    return min(MAX_VOLUME, max(VOLUME_SPAN * volume, 2 * furthest))


def made(assessments: list[Assessment], choice: Choice, note: str = "",
         confirmations: Mapping[str, Confirmation] | None = None, stage: object = None) -> Decision:
    """The decision of these assessments and this choice, with what follows from them worked out once."""
    curves = {id(a): priced(a) for a in assessments}

    def curve(a: Assessment) -> Priced | None:
        return curves[id(a)] if id(a) in curves else priced(a)

    volume = next((a.rules.expected_deliverables for a in assessments if a.rules is not None), None)
    chosen = choice.chosen[0] if choice.chosen else None
    found = _flips(chosen, choice.others, volume, curve) if chosen is not None and volume is not None else None
    span = _span(volume, found) if volume else 1
    marks: tuple[tuple[int, Decimal], ...] = ()
    if found is not None and volume:
        at = ([found.below[0] + 1] if found.below else []) + ([found.above[0]] if found.above else [])
        marks = tuple((v, curve(chosen).cost(v)) for v in at if v <= span)
    return Decision(tuple(assessments), choice, note, MappingProxyType(dict(confirmations or {})), stage,
                    tuple(shown(a, choice) for a in assessments), doubt(choice.undecided),
                    tuple(break_evens(assessments)),
                    tuple(Curve(p, span) if p is not None else None for p in curves.values()), volume, found, marks,
                    settling(choice.undecided))
