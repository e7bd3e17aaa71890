"""Where each configuration stands against the choice, in one vocabulary for the report's tables, its figures, the
passes' `gpucost.standing` and the decision run's description (`WORDS`, listed in docs/report.md): chosen, tied,
undecided, not confirmed, equal on another device, costs more or slower at the same cost (timely, priced, not a
candidate), and why the others are out (under-sampled, stopped by the race, infeasible, not priced, unstable, misses the
deadline, left out when no decision was made for a reason not about them); whose committed price is shown (none of those
that cannot be committed to); which of them the cost-against-volume figure draws, and the chosen one's nearest
break-evens."""

from __future__ import annotations

from dataclasses import dataclass

from gpucost_mlflow.core.money.breakeven import BreakEven, break_even
from gpucost_mlflow.core.money.choice import Choice
from gpucost_mlflow.core.money.curve import priced
from gpucost_mlflow.core.money.decision import Assessment, unpriced
from gpucost_mlflow.core.money.feasibility import QUALITY_NOT_SHOWN, STOPPED

CHOSEN, TIED, UNDECIDED, NOT_CONFIRMED = "chosen", "tied", "undecided", "not confirmed"
COSTS_MORE, SAME_COST = "costs more", "slower at the same cost"
EQUAL = "equal, another device"  # the chosen cost, not separated, on a device the chosen plan does not rent
INFEASIBLE, NOT_PRICED, UNSTABLE, LATE = "infeasible", "not priced", "unstable", "misses the deadline"
UNDER_SAMPLED, LEFT_OUT = "under-sampled", "left out"
NOT_SHOWN = QUALITY_NOT_SHOWN  # its bar judged by its interval could not tell on this corpus (core/judging/bounds.py)
RACED = STOPPED  # measured and out: the protocol's race stopped it, fewer passes by design (core/campaign/race.py)
OUT = (INFEASIBLE, NOT_SHOWN, NOT_PRICED, UNSTABLE, LATE, UNDER_SAMPLED, RACED, LEFT_OUT, NOT_CONFIRMED)  # left out
WORDS = (CHOSEN, TIED, UNDECIDED, EQUAL, COSTS_MORE, SAME_COST, *OUT)  # every standing word, and no other
DRAWN_TIED = 3  # tied configurations drawn at most (they share one cost; more lines would hide each other)


def _among(a: Assessment, group: list[Assessment]) -> bool:
    return any(a is other for other in group)


def role(a: Assessment, choice: Choice) -> str:
    """One word for the figures' legend: how the decision treated this configuration."""
    if _among(a, choice.chosen):
        return TIED if len(choice.chosen) > 1 else CHOSEN
    if _among(a, choice.undecided):
        return UNDECIDED
    if _among(a, choice.unconfirmed):
        return NOT_CONFIRMED
    if _among(a, choice.equal):
        return EQUAL
    if _among(a, choice.others):
        candidates = choice.chosen or choice.undecided
        return SAME_COST if candidates and a.committed == min(c.committed for c in candidates) else COSTS_MORE
    if a.configuration.stopped:
        return RACED
    if a.under_sampled:
        return UNDER_SAMPLED
    if not a.feasible:
        return NOT_SHOWN if a.feasibility.startswith(QUALITY_NOT_SHOWN) else INFEASIBLE
    if a.plan is None:
        return NOT_PRICED
    if not a.stable:
        return UNSTABLE
    return LATE if a.meets_deadline is False else LEFT_OUT


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
    """The assessment as the report's tables, balance.csv and the decision run show it: without a plan or a price
    where one is withheld, the reason in its place (core/money/decision.py, `unpriced`)."""
    reason = withheld(a, choice)
    return unpriced(a, reason) if reason else a


def ordered(assessments: list[Assessment], choice: Choice) -> list[Assessment]:
    """Chosen (or tied) first, then undecided, then the other timely ones by cost, then the rest as assessed."""
    ranked = choice.chosen + choice.undecided + choice.others
    return ranked + [a for a in assessments if not _among(a, ranked)]


def fastest_left_out(assessments: list[Assessment], choice: Choice) -> Assessment | None:
    """The fastest configuration the decision left out that still has a priced forecast it may show (what speed alone
    buys: feasible, stable and timely, left out for a reason not about it); none that cannot be committed to."""
    out = [a for a in assessments if role(a, choice) in OUT and priced(a) is not None and not withheld(a, choice)]
    return min(out, key=lambda a: a.configuration.durations.median) if out else None


@dataclass(frozen=True)
class Flips:
    """Where the chosen configuration stops being the cheapest around the declared volume: the nearest volume
    below which another one costs less, the nearest from which another one does, how far the order was searched
    (where both meet the deadline), and the largest volume at which the chosen one meets the deadline itself."""

    below: tuple[int, Assessment] | None = None  # up to this volume the other costs less
    above: tuple[int, Assessment] | None = None  # from this volume the other costs less
    searched_to: int | None = None
    reach: int | None = None  # None: no deadline (or no forecast)


def flips(chosen: Assessment, others: list[Assessment], at: int) -> Flips:
    """The nearest break-evens of the chosen configuration against any of the others (core/money/breakeven.py,
    compared only where both meet the deadline), and where the chosen one stops meeting the deadline."""
    mine = priced(chosen)
    if mine is None:
        return Flips()
    by_name = {a.configuration.name: a for a in others}
    found: list[BreakEven] = []
    for other in others:
        theirs = priced(other)
        if theirs is not None and other is not chosen:
            found.append(break_even(mine, theirs, at))
    below = max(((b.flip_below[0], by_name[b.flip_below[1]]) for b in found
                 if b.flip_below and b.flip_below[1] in by_name), key=lambda f: f[0], default=None)
    above = min(((b.flip_above[0], by_name[b.flip_above[1]]) for b in found
                 if b.flip_above and b.flip_above[1] in by_name), key=lambda f: f[0], default=None)
    searched = max((b.searched_to for b in found), default=None)
    return Flips(below, above, searched, mine.deadline_reach())


def drawn(assessments: list[Assessment], choice: Choice, found: Flips | None = None) -> list[Assessment]:
    """The configurations the cost-against-volume figure draws: the chosen one and up to two more tied, the
    runner-up, those at the nearest break-evens (`found`) and the fastest one left out; the undecided ones without
    a choice, else the four cheapest priced; never one whose committed price is withheld (`withheld`)."""
    if choice.chosen:
        group = choice.chosen[:DRAWN_TIED] + choice.others[:1]
    elif choice.undecided:
        group = list(choice.undecided)
    else:
        group = sorted((a for a in assessments if a.committed is not None and not withheld(a, choice)),
                       key=lambda a: a.committed)[:4]
    extra = [flip[1] for flip in ((found.below, found.above) if found else ()) if flip is not None]
    extra.append(fastest_left_out(assessments, choice))
    for other in extra:
        if other is not None and not _among(other, group):
            group.append(other)
    return [a for a in group if priced(a) is not None and not withheld(a, choice)]


def volume(assessments: list[Assessment]) -> int | None:
    """The protocol's expected deliverables, the volume the decision was made at (None when unknown)."""
    return next((a.rules.expected_deliverables for a in assessments if a.rules is not None), None)
