"""Where each configuration stands against the choice, in one vocabulary for the report's tables, its figures, the
passes' `gpucost.standing` and the decision run's description (`WORDS`, listed in docs/report.md): chosen, tied,
undecided, not confirmed, equal on another device, costs more or slower at the same cost (timely, priced, not a
candidate), and why the others are out (under-sampled, stopped by the race, infeasible, not priced, unstable, misses the
deadline, left out when no decision was made for a reason not about them); whose committed price is shown (none of those
that cannot be committed to); and which of them the cost-against-volume figure draws."""

from __future__ import annotations

from gpucost_mlflow.core.money.choice import Choice
from gpucost_mlflow.core.money.decided import Decision, withheld
from gpucost_mlflow.core.money.decision import Assessment
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


def ordered(assessments: list[Assessment], choice: Choice) -> list[Assessment]:
    """Chosen (or tied) first, then undecided, then the other timely ones by cost, then the rest as assessed."""
    ranked = choice.chosen + choice.undecided + choice.others
    return ranked + [a for a in assessments if not _among(a, ranked)]


def fastest_left_out(decision: Decision) -> Assessment | None:
    """The fastest configuration the decision left out that still has a priced forecast it may show (what speed alone
    buys: feasible, stable and timely, left out for a reason not about it); none that cannot be committed to."""
    choice = decision.choice
    out = [a for a in decision.assessments
           if role(a, choice) in OUT and decision.curve(a) is not None and not withheld(a, choice)]
    return min(out, key=lambda a: a.configuration.durations.median) if out else None


def drawn(decision: Decision) -> list[Assessment]:
    """The configurations the cost-against-volume figure draws: the chosen one and up to two more tied, the
    runner-up, those at the chosen one's nearest break-evens and the fastest one left out; the undecided ones without
    a choice, else the four cheapest priced; never one whose committed price is withheld (`withheld`)."""
    choice, found = decision.choice, decision.flips if decision.volume else None
    if choice.chosen:
        group = choice.chosen[:DRAWN_TIED] + choice.others[:1]
    elif choice.undecided:
        group = list(choice.undecided)
    else:
        group = sorted((a for a in decision.assessments if a.committed is not None and not withheld(a, choice)),
                       key=lambda a: a.committed)[:4]
    extra = [flip[1] for flip in ((found.below, found.above) if found else ()) if flip is not None]
    extra.append(fastest_left_out(decision))
    for other in extra:
        if other is not None and not _among(other, group):
            group.append(other)
    return [a for a in group if decision.curve(a) is not None and not withheld(a, choice)]
