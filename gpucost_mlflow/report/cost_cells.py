"""One assessment's costs as the plan and decision tables say them: the committed cost, the median-pass plan and what
it would save, the planning budget, the spare capacity and the cost per validated corpus, or why each is empty."""

from __future__ import annotations

from gpucost_mlflow.core.money import units
from gpucost_mlflow.core.money.costs import money
from gpucost_mlflow.core.money.decision import Assessment
from gpucost_mlflow.report.cells import Table


def committed(table: Table, a: Assessment) -> str:
    """The committed cost, or why there is none: not priced, or not committed (the decision's `shown_of`: a
    configuration that cannot be committed to shows its reason, never its would-be price)."""
    return money(a.committed, a.currency) if a.committed is not None else table.fold(a.priced)


def per_corpus(table: Table, a: Assessment) -> str:
    """The cost per validated corpus, or why it is undefined."""
    if a.cost_per_validated is not None:
        return f"{a.cost_per_validated:,.2f} {a.currency}"
    return table.fold(units.NO_RESULT)


def saving(a: Assessment) -> str:
    """The median-pass plan when it is cheaper than the committed one, with the difference; else 'the same'."""
    if a.median_plan is None:
        return ""
    if a.saving is None:
        return "the same plan"
    return f"{a.median_plan.describe()} (saves {money(a.saving, a.currency)} if no pass is slower than the median)"


def per_inputs(table: Table, a: Assessment) -> str:
    """The planning budget per million planned inputs (and per million planned output tokens where they are counted),
    or why none: a forecast from the planned volume, never a cost per validated result."""
    if a.cost_per_million_inputs is None:
        return table.fold(a.priced) if a.committed is None else ""
    tokens = a.cost_per_million_output_tokens
    extra = f"; {units.money(tokens, a.currency)} per million planned output tokens" if tokens is not None else ""
    return f"{units.planned_inputs(a.cost_per_million_inputs, a.currency)}{extra}"


def capacity(a: Assessment) -> str:
    """'328 corpora (324 more), 335.37 USD per million planned inputs then' (a forecast), or '' when not priced."""
    found = a.spare
    if found is None:
        return ""
    then = (f", {units.planned_inputs(a.spare_cost_per_million_inputs, a.currency)} then"
            if a.spare_cost_per_million_inputs is not None and found.spare else "")
    return f"{found.said()}{then}"
