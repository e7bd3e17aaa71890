"""The decision card: the answer in at most five short lines at the top of report.html and report.md, before the
question: what to rent, which configuration at what cost per 1,000 validated inputs (none yet before a deliverable
is accepted; a planning figure is a forecast and stays in the note), the window against the
deadline, the runner-up and its margin, and what would change the decision. Names are the short ones
(report/short.py); the full decision note follows below the card."""

from __future__ import annotations

import datetime as dt
import re

from gpucost_mlflow.core.inputs.plan_start import like
from gpucost_mlflow.core.measurement.confirmation import NOT_YET
from gpucost_mlflow.core.measurement.stats import NOT_BY_PASSES, TOO_SHORT_TO_TIME
from gpucost_mlflow.core.money import costs, units
from gpucost_mlflow.core.money.catalog import UNDATED
from gpucost_mlflow.core.money.choice import NOT_HELD, NOTHING_PRICED, STAGE_OPEN, Doubt
from gpucost_mlflow.core.money.decided import Settling
from gpucost_mlflow.core.money.decision import NO_PLAN, Assessment
from gpucost_mlflow.core.money.plans import Plan
from gpucost_mlflow.report import short
from gpucost_mlflow.report.card_window import lasting, measuring, past_start, window
from gpucost_mlflow.report.model import Report

LINES = 5

# What would change a missing decision, by the short reason core/money/choice.py gives.
HINTS = {
    "nothing accepted": "a pass that completes the corpus with every check passed",
    "no configuration is feasible": "configurations whose every counted pass is accepted (see the standing column)",
    NO_PLAN: "a `plan:` in the protocol (setup and waiting hours, restarts, start)",
    NOTHING_PRICED: "a catalog row for the device measured, or a what-if catalog (`gpucost catalog example`)",
    "the deadline cannot be checked": "a `plan.start` in the protocol",
    "deadline missed": "a later deadline, or a configuration fast enough to meet it",
    "no stable configuration": "re-measuring: every timely configuration's durations spread beyond max_spread_ratio",
    NOT_HELD: "a new protocol, in a new experiment: the rate or the quality measured in five short passes did not last",
    STAGE_OPEN: ("every device of the second stage reporting (`gpucost fleet status` follows a fleet's jobs), then "
                 "`gpucost report`"),
}


BILLED = re.compile(r"\b(\d+\.\d+) h billed")  # billed hours with a fraction, as a plan describes them


def hours_minutes(hours: float) -> str:
    """Hours as a person reads them: '16 h 34 min' for 16.5689, '45 min' under an hour, '3 h' for whole hours."""
    whole, minutes = divmod(round(float(hours) * 60), 60)
    return " ".join(part for part in (f"{whole} h" if whole else "", f"{minutes} min" if minutes else "")
                    if part) or "0 min"


def _plan(plan: Plan) -> str:
    """'cpu hourly, 1 lot, 16 h 34 min billed (min 60 s, per 1 s)': the plan without its total, its billed hours in
    hours and minutes."""
    said = plan.describe().replace(f": {costs.money(plan.total, plan.currency)}", "", 1)
    return BILLED.sub(lambda found: f"{hours_minutes(float(found.group(1)))} billed", said)


def _rate(plan: Plan) -> str:
    """', at 0.8048 USD per lot-hour': an hourly plan's rate, which with its billed hours makes its price."""
    return f", at {plan.offer.kind.price(plan.offer)}" if plan.offer.kind.by_the_hour else ""


def price_age(plan: Plan, today: dt.date | None) -> str:
    """How old the committed price is and whether it is a quote: '; an example price as of 2026-12-03 (0 days), not a
    quote', '; price as of 2026-09-24 (70 days)', '; undated price' (a catalog row that says nowhere when)."""
    when = plan.offer.dated(today) if today else ""
    if plan.offer.example:
        kind = "an undated example price" if when == UNDATED else f"an example price {when}".rstrip()
        return f"; {kind}, not a quote"
    return f"; price {when}" if when.startswith("as of") else (f"; {when}" if when else "")


def _rent(chosen: Assessment, today: dt.date | None) -> str:
    """What to rent: the committed cost with its currency, the plan (row, lots, billed hours or periods), and the
    price's date."""
    return (f"{costs.money(chosen.committed, chosen.currency)} committed for {_plan(chosen.plan)}"
            f"{_rate(chosen.plan)}{price_age(chosen.plan, today)}")


def _run(chosen: list[Assessment], names: short.Names) -> str:
    """Which one configuration to run (of a tie, the one the tie rule names: core/money/choice.py `to_run`, the others
    said equal in cost) and the shared device once; no cost per result: no deliverable is validated before it is
    delivered (the quality bar was met on the comparison corpus), and a planning figure from the planned volume is a
    forecast, said in the note below, never here."""
    first = chosen[0]
    who = names.of(first.configuration)
    if len(chosen) > 1:
        who += (f", the shortest slowest-pass forecast of {len(chosen)} tied at "
                f"{costs.money(first.committed, first.currency)} (then the most spare capacity, then the name); "
                f"{', '.join(names.of(a.configuration) for a in chosen[1:])} equal in cost, their durations do not "
                "separate")
    where = f" on {names.device}" if names.device else ""
    validated = first.validated_cost_per_1000_inputs
    result = (f"{units.money(validated, first.currency)} per 1,000 validated inputs" if validated is not None
              else f"{units.NO_RESULT}; quality bar met on the comparison corpus")
    return f"{who}{where} ({result})"


def _confirmed(report: Report, names: short.Names) -> str:
    """Whether the choice held on its confirmation run: the verdict and figures of the one configuration to run (a
    tie's others are equal in cost, not run, so not confirmed: `gpucost confirm` confirms the one the card runs), and
    the command that runs it while it is not yet confirmed."""
    first = report.choice.chosen[0]
    found = report.confirmations.get(first.configuration.name)
    if found is None:
        return ""
    said = f"{found.verdict}: {found.figures}"
    return said + (f" (`{report.confirm}`)" if found.verdict == NOT_YET and report.confirm else "")


def _margin(chosen: Assessment, other: Assessment) -> str:
    """The other's committed cost and how much more it is, in money and per cent of the chosen one's."""
    difference = other.committed - chosen.committed
    if difference == 0:
        return "the same cost, slower (its durations separate)"
    share = f", {100 * difference / chosen.committed:+.1f} %" if chosen.committed else ""
    return (f"{costs.money(other.committed, other.currency)} ({costs.money(difference, other.currency)} more{share})"
            f"{_why(chosen, other)}")


def _why(chosen: Assessment, other: Assessment) -> str:
    """Why the other costs more where the two rent different hourly offers: each one's rate and billed hours (a
    faster device at a dearer rate: ': 1.006 USD per lot-hour for 16 h 47 min against 0.8048 ... for 16 h 34 min')."""
    mine, theirs = chosen.plan, other.plan
    if (mine is None or theirs is None or mine.offer == theirs.offer
            or not (mine.offer.kind.by_the_hour and theirs.offer.kind.by_the_hour)):
        return ""
    return (f": {theirs.offer.kind.price(theirs.offer)} for {hours_minutes(theirs.hours_billed)} billed against "
            f"{mine.offer.kind.price(mine.offer)} for {hours_minutes(mine.hours_billed)}")


def _runner_up(report: Report, names: short.Names) -> str:
    """The equal alternatives on other devices, each with its own plan, then the next timely configuration and its
    margin, or why there is none."""
    choice = report.choice
    rest = [a for a in choice.others if not any(a is e for e in choice.equal)]
    if choice.equal:
        each = "; ".join(f"{names.of(a.configuration)}, {costs.money(a.committed, a.currency)} committed for "
                         f"{_plan(a.plan)}" for a in choice.equal)
        said = (f"equal in cost on another device, not separated (a plan rents one device: the faster median "
                f"picks it): {each}")
        return said + (f"; next {names.of(rest[0].configuration)} at {_margin(choice.chosen[0], rest[0])}"
                       if rest else "")
    if not rest:
        return "none: every other configuration is left out (the standing column says why)"
    return f"{names.of(rest[0].configuration)} at {_margin(choice.chosen[0], rest[0])}"


def _reach_from_now(report: Report, a: Assessment) -> int | None:
    """The volume whose slowest-pass forecast meets the deadline when started at the report's reading (None unless
    the declared start is past and a deadline is declared)."""
    found = report.decided.curve(a)
    if past_start(report, a) is None or found is None or a.rules is None or a.rules.deadline is None:
        return None
    return found.reach_within((a.rules.deadline - like(report.read_at, a.rules.deadline)).total_seconds() / 3600)


def _changes(report: Report, names: short.Names) -> str:
    """The nearest break-even volumes against any other timely configuration, where the chosen one stops meeting the
    deadline; never a step that cannot change the cost (more passes to split a tie at one cost change nothing)."""
    choice, volume, found = report.choice, report.decided.volume, report.decided.flips
    chosen = choice.chosen[0]
    words = []
    if volume is not None:
        if found.below:
            words.append(f"up to {found.below[0]:,} corpora {names.of(found.below[1].configuration)} costs less")
        if found.above:
            words.append(f"from {found.above[0]:,} corpora {names.of(found.above[1].configuration)} costs less")
        if choice.others and not (found.below or found.above):
            words.append("no break-even: it stays the cheapest wherever the others meet the deadline"
                         if found.reach is not None else
                         f"no break-even from 1 to {found.searched_to:,} corpora" if found.searched_to > volume else
                         f"no break-even searched beyond the declared {volume:,} corp{'ora' if volume != 1 else 'us'}, "
                         "where it costs the least")
        if found.reach is not None:
            words.append(f"above {found.reach:,} corpora it misses the deadline" if found.reach else
                         "it misses the deadline at every volume")
            now = _reach_from_now(report, chosen)
            if now is not None:
                words[-1] += (f" from the declared start; started now, above {now:,}" if now else
                              " from the declared start; started now, at every volume")
    return "; ".join(words) or "nothing: no other timely configuration to compare with"


def _rent_run_doubt(found: Doubt, group: list[Assessment], names: short.Names, today: dt.date | None
                    ) -> list[tuple[str, str]]:
    """Rent, Run and In doubt of an undecided group, all on one device: the rented plan covers that device's
    undecided configurations only, Run names one of them, the money in doubt is against their own plans; the
    group's other devices are named with what each would commit."""
    currency = found.rent.currency
    example = price_age(found.plan, today)
    mine = [a for a in group if a.configuration.device == found.rent.configuration.device]
    cheapest = min(mine, key=lambda a: a.committed)
    if not found.elsewhere:
        covered, run_any, against = "every undecided configuration", "or any of them", "their own plans"
    else:
        where = short.device(found.rent.configuration.device)
        covered = f"every undecided configuration on {where}"
        run_any, against = f"or any of them on {where}", f"their own plans on {where}"
        others = "; ".join(
            f"{', '.join(names.of(a.configuration) for a in d.members)} would commit "
            f"{costs.money(d.plan.total, currency)} ({_plan(d.plan)})" for d in found.elsewhere)
        covered += f"; on the group's other device{'s' if len(found.elsewhere) > 1 else ''}, {others}"
    return [
        ("Rent", (f"{costs.money(found.plan.total, currency)} committed for {_plan(found.plan)}: it covers the "
                  f"slowest pass of {covered}{example}")),
        ("Run", (f"{names.of(found.fastest.configuration)}, the fastest median "
                 f"({found.fastest.configuration.durations.median:,.3f} s), {run_any}: the plan covers each")),
        ("In doubt", _in_doubt(found, mine, cheapest, against, names)),
    ]


def _in_doubt(found: Doubt, mine: list[Assessment], cheapest: Assessment, against: str, names: short.Names) -> str:
    """The rent beyond the cheapest of the rented device's own plans; with one undecided configuration there, its own
    plan is the rent and the other devices' plans are dearer (the Rent line names them)."""
    currency = found.rent.currency
    own = f"{names.of(cheapest.configuration)} at {costs.money(cheapest.committed, currency)}"
    if len(mine) == 1 and found.elsewhere:
        return (f"{costs.money(found.in_doubt, currency)} on {short.device(cheapest.configuration.device)}: the plan "
                f"is its one undecided configuration's own ({own}); every other device's covering plan costs more")
    return (f"{costs.money(found.in_doubt, currency)}: the rent beyond the cheapest of {against} ({own}), while it is "
            "not known which is really faster")


def _undecided(report: Report, names: short.Names) -> list[tuple[str, str]]:
    """An undecided choice still answers: the plan that covers every undecided configuration's slowest pass (Rent),
    the fastest median among them (Run), the money that depends on which is really faster (In doubt), and whether and
    how more passes would settle it (Settle)."""
    group = report.choice.undecided
    prices = ", ".join(f"{names.of(a.configuration)} at {costs.money(a.committed, a.currency)}" for a in group)
    result = [("No decision", (f"undecided between {prices}: their durations do not separate, yet their slowest-pass "
                              "plans differ in price (PROTOCOL.md §6)"))]
    found = report.decided.doubt
    if found is not None:
        result += _rent_run_doubt(found, group, names, report.written)
    said = "; ".join(_settle(s, names) for s in report.decided.settling) or "more passes under the same protocol"
    result.append(("Settle", f"{said}; {report.settle}" if report.settle else said))
    return result


def _settle(s: Settling, names: short.Names) -> str:
    """What would separate two undecided configurations, as the card says it."""
    first, other = names.of(s.first.configuration), names.of(s.other.configuration)
    if s.too_short:
        return f"{TOO_SHORT_TO_TIME} to separate {first} from {other}: {NOT_BY_PASSES}"
    if s.needed:
        return f"about {s.needed} passes per configuration would separate {first} from {other}"
    return f"{first} and {other} show no median difference"


def state(report: Report) -> str:
    """The card's state, which its colour follows: decided, tied, undecided or none."""
    choice = report.choice
    if choice.decided:
        return "tied" if len(choice.chosen) > 1 else "decided"
    return "undecided" if choice.undecided else "none"


def lines(report: Report) -> list[tuple[str, str]]:
    """The card as (label, text) lines, at most five."""
    choice = report.choice
    names = short.names([a.configuration for a in report.assessments])
    if choice.decided:
        chosen = choice.chosen[0]
        confirmed = _confirmed(report, names)
        run = _run(choice.chosen, names) + (f"; {confirmed}" if confirmed else "")
        result = [(chosen.plan.offer.kind.verb, _rent(chosen, report.written)), ("Run", run),
                  ("Window", window(report, chosen) + lasting(report, chosen) + measuring(report)),
                  ("Runner-up", _runner_up(report, names)),
                  ("Would change it", _changes(report, names))]
    elif choice.none == "undecided" and choice.undecided:
        result = _undecided(report, names)
    else:
        said = choice.none + choice.detail if choice.none == STAGE_OPEN else choice.none
        hint = HINTS.get(choice.none, "see the decision note below")
        result = [("No decision", said or "nothing to decide"),
                  ("Would change it", f"{hint}. {report.priced_hint}" if report.priced_hint else hint)]
        if choice.none == NOT_HELD:
            result.insert(1, ("Confirmation", "; ".join(f"{name} not confirmed: {found.figures}"
                                                         for name, found in report.confirmations.items()
                                                         if found.failed)))
        if names.device:
            result.append(("Measured on", names.device))
    return result[:LINES] + ([("Delivered", report.delivered)] if report.delivered else [])  # fleet deliver

