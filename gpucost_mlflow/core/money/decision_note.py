"""The decision note: the chosen configuration, its slow-end plan, the load it covers and the reason, or why there is
none; what it leaves out (under-sampled, unstable, an exclusion that decides it) and the planning figure, named a
forecast. The choice itself is core/money/choice.py's."""

from __future__ import annotations

from gpucost_mlflow.core.money import costs, units
from gpucost_mlflow.core.money.choice import Choice, choose
from gpucost_mlflow.core.money.decision import NO_DEADLINE, Assessment, assess_one


def _exclusion_notes(choice: Choice, assessments: list[Assessment], deadline_declared: bool) -> list[str]:
    """Name each excluded pass without which its chosen configuration would not be chosen (PROTOCOL.md §6)."""
    notes = []
    for chosen in choice.chosen:
        if chosen.rules is None:
            continue
        for excluded in chosen.configuration.excluded:
            restored = assess_one(chosen.configuration.restored(excluded), chosen.rules)
            again = choose([restored if a is chosen else a for a in assessments], deadline_declared)
            if any(a is restored for a in again.chosen):
                continue
            why = (restored.feasibility if not restored.feasible else restored.unstable or
                   (f"the decision would be {' or '.join(a.configuration.name for a in again.chosen)}" if again.chosen
                    else f"no decision: {again.none}"))
            notes.append(f"Excluded run {excluded.run_id[:8]} of {chosen.configuration.name} (was "
                         f"{excluded.status_before or 'not recorded'}; cause: {excluded.cause or 'not recorded'}) "
                         f"decides it: without that exclusion it would not be chosen ({why})")
    return notes


def _spare(a: Assessment) -> str:
    """Hours the committed plan pays for beyond the slowest-pass forecast."""
    spare = float(a.plan.covered_hours) - a.forecast.high_hours
    return f"{spare:,.1f} h of its plan spare at the slowest pass" if spare > 0 else "no spare hours in its plan"


def equal_alternatives(choice: Choice) -> str:
    """'equal in cost on another device, not chosen (a plan rents one device; the faster median, then the name, picks
    it): batch8 on GPU B, 110.00 USD committed for ...' ('' without any)."""
    if not choice.equal:
        return ""
    each = "; ".join(f"{a.configuration.name}, {costs.money(a.committed, a.currency)} committed for its own plan "
                     f"({a.plan.describe()})" for a in choice.equal)
    return (f"equal in cost on another device, durations not separated, not chosen (a plan rents one device: the "
            f"faster median, then the name, picks it): {each}")


def capacity_note(a: Assessment) -> str:
    """' Planning budget, a forecast from the planned volume (no cost per result yet: no deliverable accepted):
    27,500.00 USD per million planned inputs; the same 110.00 USD would cover up to 160 corpora (156 more) at the
    slowest pass, 687.50 USD per million planned inputs then.' ('' when not priced per unit). Never on the
    decision's head: no deliverable is validated before it is delivered (PROTOCOL.md)."""
    if a.cost_per_million_inputs is None:
        return ""
    tokens = (f" and {units.money(a.cost_per_million_output_tokens, a.currency)} per million planned output tokens"
              if a.cost_per_million_output_tokens is not None else "")
    found = a.spare
    more = ""
    if found is not None and found.spare > 0:
        more = (f"; the same {costs.money(a.committed, a.currency)} would cover up to {found.said()} "
                "at the slowest pass, "
                f"{units.planned_inputs(a.spare_cost_per_million_inputs, a.currency)} then")
    return (f" {units.PLANNING} ({units.NO_RESULT}): "
            f"{units.planned_inputs(a.cost_per_million_inputs, a.currency)}{tokens}{more}.")


def decide(assessments: list[Assessment], expected_deliverables: int, corpus_size: int,
           deadline_declared: bool = True, choice: Choice | None = None) -> str:
    """The decision note: chosen configuration, its slow-end plan, load covered and reason; or 'no decision' with the
    reason; then what the decision leaves out (under-sampled, unstable, decided by an exclusion). `choice`: the one
    `choose` already made of these assessments (made here when not given)."""
    choice = choice or choose(assessments, deadline_declared)
    extra = "".join(f" {note}." for note in choice.notes
                    + _exclusion_notes(choice, assessments, deadline_declared))
    if not choice.decided:
        return f"No decision: {choice.none}{choice.detail}.{extra}"
    chosen, tied = choice.chosen[0], choice.chosen
    others = [a for a in choice.others if not any(a is e for e in choice.equal)]
    load = f"{expected_deliverables:,} corpus(es) of {corpus_size:,} inputs"
    versus = (f"; next: {others[0].configuration.name} at {costs.money(others[0].committed, others[0].currency)}"
              if others else "")
    f = chosen.forecast
    when = (f" ending by {chosen.forecast_end_high.isoformat(timespec='minutes')}" if chosen.forecast_end_high else "")
    status = f"deadline {chosen.deadline_status}" if deadline_declared else NO_DEADLINE
    rule = "whose slowest-pass forecast meets the deadline" if deadline_declared else "(no deadline declared)"
    example = (f" Priced at an example price ({chosen.plan.offer.source}): a what-if, not a provider's quote."
               if chosen.plan.offer.example else "")
    saving = (f" At the median pass the work fits {chosen.median_plan.describe()}: a possible saving of "
              f"{costs.money(chosen.saving, chosen.currency)}, not committed." if chosen.saving is not None else "")
    head = f"Decision: {chosen.configuration.name}"
    why = f"the lowest committed cost among feasible, stable configurations {rule}"
    per_unit = capacity_note(chosen)
    if len(tied) > 1:
        head = "Decision (tied): " + " or ".join(a.configuration.name for a in tied)
        why += (f", reached equally by these {len(tied)} configurations whose durations do not separate "
                f"({choice.tie}); none is preferred on speed, and {chosen.configuration.name} is the one to run: "
                "the shortest slowest-pass forecast, then the most spare capacity, then the name")
    elif choice.faster:
        why += f"; preferred at the same cost for speed ({choice.faster}), with {_spare(chosen)}"
    if choice.equal:
        why += f"; {equal_alternatives(choice)}"
    return (f"{head}, {chosen.priced}, covers {load} within a forecast window of {f.hours:,.1f} h (range "
            f"{f.low_hours:,.1f}-{f.high_hours:,.1f} h; the plan covers the slowest pass's "
            f"{f.high_hours:,.1f} h){when} ({status}). Reason: {why}"
            f"{versus}.{per_unit}{saving}{example}{extra}")
