"""The decision run as MLflow shows it: its name (what it decided, first), the standing its passes are tagged with,
and its description (the decision note, the balance in short, what it read and was priced with). One layer writes
the decision's words, the report's; tracking/decision_run.py stores them.
"""

from __future__ import annotations

from collections.abc import Callable

from gpucost_mlflow.core.money import costs
from gpucost_mlflow.core.money.choice import Choice
from gpucost_mlflow.core.money.decision import Assessment, Configuration
from gpucost_mlflow.core.names import STEADY_LAP
from gpucost_mlflow.report import card, confirmed, standing
from gpucost_mlflow.report.model import Report
from gpucost_mlflow.tracking import schema, ui
from gpucost_mlflow.tracking.descriptions import SEP, bounded, markdown_table, number, short

DECISION_NAME = 60  # a decision run's name: its title and the runs table's cell show it whole
WHAT_IF = schema.WHAT_IF  # ends the name of a decision priced with example prices
WHAT_IF_PROTOCOL = "what-if protocol"


def _chosen(choice: Choice) -> str:
    if not choice.decided:
        return f"none ({choice.none})"
    return " or ".join(a.configuration.name for a in choice.chosen)


def _decision_head(choice: Choice) -> str:
    return "decision (tied)" if len(choice.chosen) > 1 else "decision"


def decision_name(choice: Choice, example_prices: bool, what_if_protocol: bool = False,
                  named: Callable[[Configuration], str] | None = None, confirmed: str = "") -> str:
    """At most DECISION_NAME characters, so the runs table and the run's title show it whole, and starting with
    what tells two decisions apart: `batch8 · chosen`, `batch64-bf16-lg +5 · tied · what-if`,
    `batch16-lg +2 · undecided`, `nothing priced · no decision`. named gives a configuration's short name (the
    report's, device left out when all share it; the variant alone by default); `confirmed` (report/confirmed.py:
    `confirmed`, `confirmed 1 of 3`, `not yet confirmed`, `not confirmed`) follows what was decided; `what-if`
    ends the name of a decision priced with example prices or made under a what-if protocol."""
    named = named or (lambda config: config.label)
    ending = f"{SEP}{WHAT_IF_PROTOCOL}" if what_if_protocol else (f"{SEP}{WHAT_IF}" if example_prices else "")
    ending = (f"{SEP}{confirmed}" if confirmed else "") + ending
    group = choice.chosen or choice.undecided
    if not group:
        tail = f"{SEP}no decision{ending}"
        return short(choice.none, DECISION_NAME - len(tail)) + tail
    state = "chosen" if len(choice.chosen) == 1 else "tied" if choice.chosen else "undecided"
    more = f" +{len(group) - 1}" if len(group) > 1 else ""
    tail = f"{more}{SEP}{state}{ending}"
    return f"{short(named(group[0].configuration), DECISION_NAME - len(tail))}{tail}"


def standing_tag(role: str, example_prices: bool) -> str:
    """A pass's `gpucost.standing`: its configuration's role in the latest decision, `chosen · what-if` when that
    decision was priced with example prices."""
    return f"{role}{SEP}{WHAT_IF}" if example_prices else role


def _balance_row(a: Assessment, standing_word: str) -> list[str]:
    """One configuration in the description's balance; `a` as the decision shows it: "not committed: <reason>"
    where a configuration that cannot be committed to would show a price."""
    c = a.configuration
    committed = costs.money(a.committed, a.currency) if a.committed is not None else short(a.priced, 80)
    feasible = (f"yes, {a.unstable}" if a.unstable else "yes") if a.feasible else f"no: {short(a.feasibility, 80)}"
    return [c.name, standing_word or "-", feasible,
            number(c.durations.median, 3, " s"), number(a.forecast_hours, 1, " h"), committed,
            short(a.deadline_status, 60) or "-"]


def decision_note(report: Report, campaigns: dict[str, str], experiment_id: str, outside: int) -> str:
    """The decision run's description: the decision note, the balance in short (one row per configuration, with its
    standing: report/standing.py's words), the campaigns it read (links to their runs; `outside`: the passes of
    none) and what it was priced with; a what-if protocol says so first."""
    choice, assessments, what_if, catalog = report.choice, report.assessments, report.what_if, report.catalog
    decision, protocol_digest = report.decision, report.protocol_digest
    standings = {a.configuration.name: standing.role(a, choice) for a in assessments}
    head = f"{_decision_head(choice).capitalize()}: {_chosen(choice)}"
    lines = [f"### {WHAT_IF_PROTOCOL.capitalize()}: {head[0].lower()}{head[1:]}" if what_if else f"### {head}", "",
             decision, ""]
    if confirmed.line(report):
        lines += [confirmed.line(report), ""]
    if choice.undecided:  # what an undecided decision still answers, on one device, as the card says it
        lines += [f"- **{label}:** {text}" for label, text in card.lines(report)[1:]] + [""]
    if what_if:
        lines += [(f"**What-if:** decided under {what_if} (`{report.what_if_digest[:12]}`), not the protocol locked on "
                   f"the experiment (`{protocol_digest[:12]}`)."), ""]
    if report.example_prices:
        lines += [f"**What-if:** priced with example prices ({catalog}), not a provider's quote.", ""]
    if assessments:  # by committed cost, cheapest first; those with nothing committed last
        shown = sorted((report.decided.shown_of(a) for a in assessments),
                       key=lambda a: (a.committed is None, a.committed or 0))
        lines += markdown_table(["configuration", "standing", "feasible", f"median {STEADY_LAP}", "forecast",
                                 "committed", "deadline"],
                                [_balance_row(a, standings.get(a.configuration.name, "")) for a in shown],
                                padded=True) + [""]
    read = [f"[{cid}]({ui.run_path(experiment_id, run_id)})" if run_id else f"`{cid}`"
            for cid, run_id in campaigns.items()]
    lines.append(f"- **Campaigns read:** {', '.join(read) or 'none'}"
                 + (f"; {outside} pass(es) outside any campaign" if outside else ""))
    lines.append(f"- **Passes:** [{ui.PASSES_VIEW_NAME}]({ui.runs_path(experiment_id)}), each with its "
                 f"configuration's standing in the latest decision (`{schema.STANDING}`)")
    dated = card.price_age(choice.chosen[0].plan, report.written) if choice.decided else ""
    lines.append(f"- **Protocol:** `{protocol_digest[:12]}`; **catalog:** {catalog}{dated}")
    lines.append("- **Files:** `report.html` (the full report), `report.md`, `attempts.csv`, `balance.csv`, "
                 f"`{schema.COST_VOLUME_FIGURE}` (committed cost against volume), `{schema.DURATIONS_FIGURE}` (every "
                 f"pass's duration), `{schema.MEMORY_FIGURE}` (peak memory per counter)")
    return bounded(lines)
