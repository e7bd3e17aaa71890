"""The choice among assessed configurations: the cheapest timely, stable one committed to its slow-end plan (ties
only among configurations that do not separate, undecided when noise sets the price), what the note adds, the
decision note and the break-even volumes between devices."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from decimal import Decimal

from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.measurement.stats import DEFAULT_CONFIDENCE, NOT_BY_PASSES, repetitions_needed, separate
from gpucost_mlflow.core.money import costs
from gpucost_mlflow.core.money.breakeven import BreakEven, Priced, break_even
from gpucost_mlflow.core.money.decision import NO_PLAN, Assessment
from gpucost_mlflow.core.money.feasibility import QUALITY_NOT_SHOWN
from gpucost_mlflow.core.money.plans import covering_plans, to_hours

NOTHING_PRICED = "nothing priced"  # the short reason when no feasible configuration has a covering plan


def decidable(a: Assessment) -> bool:
    """Feasible, priced and stable: a configuration the decision may weigh."""
    return a.feasible and a.plan is not None and a.stable


def break_evens(assessments: list[Assessment]) -> list[BreakEven]:
    """For each pair of priced devices, where the order of their cheapest decidable configurations flips, compared
    only at volumes where both still meet the deadline (slowest-pass forecast)."""
    by_device: dict[str, list[Assessment]] = {}
    for a in assessments:
        if decidable(a):
            by_device.setdefault(a.configuration.device, []).append(a)
    best = [min(items, key=lambda a: (a.meets_deadline is False, a.committed, a.configuration.durations.median))
            for items in by_device.values()]
    result = []
    for i, first in enumerate(best):
        for second in best[i + 1:]:
            priced = [Priced(a.configuration.name, a.forecast, tuple(p.offer for p in a.plans), a.configuration.gpus,
                             a.rules.deadline_hours if a.rules else None, a.work) for a in (first, second)]
            result.append(break_even(priced[0], priced[1], first.forecast.deliverables))
    return result


@dataclass(frozen=True)
class Choice:
    """What the decision rule settled: the chosen configuration (with any tied at its cost), or why there is none."""

    chosen: list[Assessment] = field(default_factory=list)  # empty: no decision; several: a tie
    none: str = ""  # the short reason there is no decision ("nothing accepted")
    detail: str = ""  # what the note says after the short reason
    tie: str = ""  # the separation verdict behind a tie
    others: list[Assessment] = field(default_factory=list)  # the other timely stable configurations, cheapest first
    undecided: list[Assessment] = field(default_factory=list)  # do not separate, yet their slow-end plans differ
    notes: list[str] = field(default_factory=list)  # what the note adds: under-sampled or unstable would-be choices
    faster: str = ""  # why the chosen one is preferred over others at its cost (they separate on duration)
    unconfirmed: list[Assessment] = field(default_factory=list)  # chosen, then not confirmed on the confirmation run
    # at the chosen cost on other devices, not separated from it: each an equal alternative with its own plan (also
    # first among `others`); the chosen device is the one of the faster median, then the name
    equal: list[Assessment] = field(default_factory=list)

    @property
    def decided(self) -> bool:
        return bool(self.chosen)


def _confidence(a: Assessment) -> float:
    return a.rules.confidence if a.rules else DEFAULT_CONFIDENCE


def _separation(a: Assessment, b: Assessment):
    required = a.rules.required_passes if a.rules else None
    return separate(a.configuration.name, a.configuration.separated_on, b.configuration.name,
                    b.configuration.separated_on, required, _confidence(a),
                    (a.configuration.too_short, b.configuration.too_short), a.rules.looks if a.rules else 1)


def _plan_at(a: Assessment, slowest_h: float):
    """The plan a would commit to had its slowest deliverable taken slowest_h hours (another configuration's), or
    None when no row covers that window."""
    f = a.forecast
    window = replace(f, per_deliverable_h=(f.per_deliverable_h[0], f.per_deliverable_h[1], slowest_h)).high_hours
    plans = covering_plans([p.offer for p in a.plans], to_hours(window), a.configuration.gpus, slowest_h, a.work)
    return plans[0] if plans else None


def _cost_at(a: Assessment, slowest_h: float) -> Decimal | None:
    """The committed cost of a had its slowest deliverable taken slowest_h hours (another configuration's); None when
    no row covers that window."""
    plan = _plan_at(a, slowest_h)
    return plan.total if plan is not None else None


def _noise_priced(cheap: Assessment, dear: Assessment) -> bool:
    """Whether the price difference is bought by noise (docs/costs.md, "Noise across devices"): their durations do
    not separate, and the cheaper one, priced at the slowest pass of the two, costs more than its own plan and no
    less than the other's. Prices are compared on every device alike: two configurations of one device may rent
    different rows or lots (a lanes configuration's GPUs), so one device is never taken for one price."""
    if _separation(cheap, dear).decided:
        return False
    at_slowest = _cost_at(cheap, max(cheap.forecast.per_deliverable_h[2], dear.forecast.per_deliverable_h[2]))
    if at_slowest is None:
        return True  # no row covers the cheaper one at the slowest pass: its price there is unknown
    return cheap.committed < at_slowest and at_slowest >= dear.committed


def _by_speed(a: Assessment) -> tuple:
    """The faster median first, then the name: the order a tie at one cost is read in."""
    return a.configuration.durations.median, a.configuration.name


def to_run(a: Assessment) -> tuple:
    """The order a tie at one cost is run in: the shortest slowest-pass forecast, then the most spare capacity, then
    the name (one configuration to launch, whose window and capacity the card gives)."""
    spare = a.spare
    return a.forecast.high_hours, -(spare.capacity if spare else 0), a.configuration.name


def _rank(timely: list[Assessment]) -> Choice:
    """Among timely stable configurations: the cheapest committed cost; at that cost the fastest, with only those
    of its device that do not separate from it tied (a plan rents one device); those of other devices that do not
    separate are its equal alternatives, each with its own plan; undecided when a costlier one differs only by
    noise."""
    cheapest = min(a.committed for a in timely)
    at_cost = sorted((a for a in timely if a.committed == cheapest), key=_by_speed)
    tied, equal = [at_cost[0]], []
    for other in at_cost[1:]:
        if any(_separation(member, other).decided for member in tied):
            continue
        (tied if other.configuration.device == tied[0].configuration.device else equal).append(other)
    dearer = [a for a in timely if a.committed > cheapest and any(_noise_priced(t, a) for t in tied + equal)]
    if dearer:
        group = tied + equal + dearer
        rest = sorted((a for a in timely if not any(a is g for g in group)), key=lambda a: a.committed)
        return Choice(none="undecided", undecided=group, others=rest, detail=_undecided_detail(tied + equal, dearer))
    tied.sort(key=to_run)  # the one to run first: every figure of the card is its own
    faster = [a for a in at_cost if a not in tied and a not in equal]
    return Choice(tied, tie=_separation(tied[0], tied[1]).verdict if len(tied) > 1 else "", equal=equal,
                  others=equal + faster + sorted((a for a in timely if a.committed > cheapest),
                                                 key=lambda a: a.committed),
                  faster=_separation(tied[0], faster[0]).verdict if faster else "")


def _undecided_detail(tied: list[Assessment], dearer: list[Assessment]) -> str:
    """Who cannot be told apart, their slow-end plans, and the passes per configuration it would take."""
    first = tied[0]
    parts = []
    for other in dearer:
        needed = repetitions_needed(first.configuration.separated_on, other.configuration.separated_on,
                                    _confidence(first))
        more = (f"about {needed} passes per configuration would let the separation test find the observed difference "
                f"(Noether's estimate for it, 80 % power)" if needed else
                "no median difference was observed: more passes are unlikely to separate them")
        if first.configuration.too_short or other.configuration.too_short:
            more = NOT_BY_PASSES
        parts.append(f"{other.configuration.name} at {costs.money(other.committed, other.currency)}: "
                     f"{_separation(first, other).verdict.split('; ')[0]}; {more}")
    return (f" between {first.configuration.name} at {costs.money(first.committed, first.currency)} and "
            + "; and ".join(parts) + ". Their durations do not separate, yet their slowest-pass plans differ in price: "
            "the price difference is bought by noise (PROTOCOL.md §6)")


def _timely(priced: list[Assessment], deadline_declared: bool) -> list[Assessment]:
    return [a for a in priced if a.meets_deadline] if deadline_declared else priced


def choose(assessments: list[Assessment], deadline_declared: bool = True) -> Choice:
    """The cheapest decidable configuration whose slowest-pass forecast meets the deadline, committed to its
    slow-end plan; ties only among configurations that do not separate; or why there is none."""
    if not assessments:
        return Choice(none="no benchmark pass in this experiment")
    if not any(Status.ACCEPTED in a.configuration.statuses for a in assessments):
        return Choice(none="nothing accepted", detail=" (no pass completed the corpus with every check passed)")
    feasible = [a for a in assessments if a.feasible]
    notes = _under_sampled_notes(assessments, deadline_declared) + _not_shown_notes(assessments, deadline_declared)
    if not feasible:
        return Choice(none="no configuration is feasible", notes=notes,
                      detail=" (" + "; ".join(f"{a.configuration.name}: {a.feasibility}" for a in assessments) + ")")
    if all(a.forecast_note == NO_PLAN for a in feasible):
        return Choice(none=NO_PLAN,
                      detail=" (declare `plan:` in the protocol: setup and waiting hours, restarts, start)")
    priced = [a for a in feasible if a.plan is not None]
    if not priced:
        return Choice(none=NOTHING_PRICED, detail=" (" + "; ".join(sorted({a.priced for a in feasible})) + ")")
    if deadline_declared and all(a.forecast_end is None for a in priced):
        return Choice(none="the deadline cannot be checked", detail=" (no plan.start declared in the protocol)")
    timely = _timely(priced, deadline_declared)
    if not timely:
        return Choice(none="deadline missed", notes=notes,
                      detail=" (no priced feasible configuration's slowest-pass forecast ends before the deadline)")
    notes += [f"Unstable, neither chosen nor tied: {a.configuration.name} is {a.unstable}; outlier pass(es): "
              f"{a.outliers()}"
              for a in timely if not a.stable and (a.committed <= min(b.committed for b in timely if b.stable)
                                                   if any(b.stable for b in timely) else True)]
    stable = [a for a in timely if a.stable]
    if not stable:
        return Choice(none="no stable configuration", notes=notes,
                      detail=" (every timely configuration's own durations spread beyond max_spread_ratio: re-measure)")
    return replace(_rank(stable), notes=notes)


@dataclass(frozen=True)
class DevicePlan:
    """One device of an undecided group: its configurations in the group and the cheapest plan that covers the
    slowest pass of each of them (never another device's pass: a plan rents one device)."""

    device: str
    members: tuple[Assessment, ...]
    plan: object  # core/money/plans.Plan
    via: Assessment  # the member whose covering plan it is

    @property
    def fastest(self) -> Assessment:
        return min(self.members, key=lambda a: a.configuration.durations.median)


@dataclass(frozen=True)
class Doubt:
    """What an undecided choice still answers, on one device: the plan that covers the slowest pass of every
    undecided configuration on it (whichever is really faster), the fastest median among them, and the money that
    depends on which is really faster (that plan against the cheapest of their own plans). Rent is the device whose
    plan is the cheapest; the group's other devices, with what each would commit, are `elsewhere`."""

    rent: Assessment  # the configuration whose covering plan is rented
    plan: object  # core/money/plans.Plan: that plan, sized at its device's slowest undecided pass
    fastest: Assessment  # on the rented device
    in_doubt: Decimal
    elsewhere: tuple[DevicePlan, ...] = ()  # the group's other devices, cheapest plan first


def device_plans(undecided: list[Assessment]) -> list[DevicePlan]:
    """Per device of the group (in the group's order), the cheapest plan covering its own members' slowest passes;
    a device no row covers that far is left out."""
    by_device: dict[str, list[Assessment]] = {}
    for a in undecided:
        by_device.setdefault(a.configuration.device, []).append(a)
    found = []
    for device, members in by_device.items():
        slowest_h = max(a.forecast.per_deliverable_h[2] for a in members)
        covering = [(plan.total, a, plan) for a in members if (plan := _plan_at(a, slowest_h)) is not None]
        if covering:
            _, via, plan = min(covering, key=lambda item: item[0])
            found.append(DevicePlan(device, tuple(members), plan, via))
    return found


def doubt(undecided: list[Assessment]) -> Doubt | None:
    """The undecided group's Rent / Run / In doubt, on the device whose own plan is the cheapest (None without a
    group, or without a plan that covers it)."""
    if not undecided:
        return None
    plans = device_plans(undecided)
    if not plans:
        return None
    rented = min(plans, key=lambda d: d.plan.total)
    in_doubt = rented.plan.total - min(a.committed for a in rented.members)
    elsewhere = tuple(sorted((d for d in plans if d is not rented), key=lambda d: d.plan.total))
    return Doubt(rented.via, rented.plan, rented.fastest, in_doubt, elsewhere)


STAGE_OPEN = "the second stage has not reported from every device"


def await_stage(choice: Choice, assessments: list[Assessment], stage: dict[str, tuple[str, ...]],
                missing: list[str]) -> Choice:
    """A decision read before every device of a second stage has reported is not read (the stage is read once, as a
    whole): undecided among the stage's configurations, naming the devices still missing (`stage`: each device's
    variants in the stage; `missing`: the devices whose passes have not all ended)."""
    if not missing:
        return choice
    group = [a for a in assessments if a.configuration.variant in stage.get(a.configuration.device, ())
             and decidable(a)]
    return Choice(none=STAGE_OPEN, undecided=group, notes=choice.notes,
                  others=[a for a in choice.chosen + choice.others if not any(a is g for g in group)],
                  detail=(f" (no result yet from {', '.join(missing)}: its stage is still running there, or its "
                          "machine was lost; the decision is read once, when every device of the stage has reported)"))


NOT_HELD = "the choice did not hold on the confirmation run"


def hold(choice: Choice, confirmations: dict) -> Choice:
    """The choice once its confirmation runs are read (`confirmations`: a Confirmation by configuration name): a
    configuration that was not confirmed leaves the choice (a tied one leaves the tie); when none is left, nothing is
    committed. Not yet confirmed changes nothing here: the card says so."""
    failed = [a for a in choice.chosen if a.configuration.name in confirmations
              and confirmations[a.configuration.name].failed]
    if not failed:
        return choice
    held = [a for a in choice.chosen if a not in failed]
    if held:
        return replace(choice, chosen=held, tie=choice.tie if len(held) > 1 else "", unconfirmed=failed,
                       notes=choice.notes + [
            f"{a.configuration.name} left the tie: not confirmed ({confirmations[a.configuration.name].figures})"
            for a in failed])
    return Choice(none=NOT_HELD, notes=choice.notes, others=choice.others, unconfirmed=failed,
                  detail=" (" + "; ".join(f"{a.configuration.name}: {confirmations[a.configuration.name].figures}"
                                          for a in failed) + ")")


def _would_be_chosen(assessments: list[Assessment], held: list[Assessment],
                     deadline_declared: bool) -> list[Assessment]:
    """Of the configurations held out of the choice (under-sampled, quality not shown), those its passes so far would
    have made the choice (or tied, or undecided) were they feasible."""
    if not held:
        return []
    candidates = [a for a in assessments
                  if (a.feasible or any(a is h for h in held)) and a.plan is not None and a.stable]
    timely = _timely(candidates, deadline_declared)
    if not timely:
        return []
    would = _rank(timely)
    return [a for a in (would.chosen or would.undecided) if any(a is h for h in held)]


def _under_sampled_notes(assessments: list[Assessment], deadline_declared: bool) -> list[str]:
    """Name an under-sampled configuration that its passes so far would have made the choice (or tied)."""
    short = [a for a in assessments if a.under_sampled]
    return [f"Under-sampled, not chosen: {a.configuration.name} is {a.under_sampled}; its passes so far would make it "
            "the choice, but one pass never beats five (PROTOCOL.md §5): run its remaining passes"
            for a in _would_be_chosen(assessments, short, deadline_declared)]


def _not_shown_notes(assessments: list[Assessment], deadline_declared: bool) -> list[str]:
    """Name a configuration whose quality was not shown (its bar's interval could not tell on this corpus) that its
    passes would otherwise have made the choice (or tied, or undecided), with the corpus that would show it."""
    unshown = [a for a in assessments if a.feasibility.startswith(QUALITY_NOT_SHOWN)]
    return [f"Quality not shown, not chosen: {a.configuration.name}, {a.feasibility}; its passes so far would make it "
            "the choice, but a bar the corpus cannot show is not met (issue 51): a larger comparison corpus (`gpucost "
            f"corpus build --size {_needed(a.feasibility)}`), in a new protocol and experiment, would show it or not"
            for a in _would_be_chosen(assessments, unshown, deadline_declared)]


def _needed(feasibility: str) -> str:
    """The inputs a not-shown bar said it needs ('about 1,225 needed' -> '1225'), else N."""
    found = re.search(r"about ([\d,]+) needed", feasibility)
    return found.group(1).replace(",", "") if found else "N"
