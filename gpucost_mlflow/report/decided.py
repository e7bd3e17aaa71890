"""What the decision run records, made from the report with no client: its name, description, tags, params, its
metrics named with their unit and rounded as the UI shows them, its files, and each pass's standing and committed
cost. tracking/decision_run.py writes it, in one go."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from gpucost_mlflow.core.inputs.plan_start import AT_REPORT
from gpucost_mlflow.core.money.decision import NO_DEADLINE, Assessment
from gpucost_mlflow.report import confirmed, decision_text, short, standing
from gpucost_mlflow.report.measured import BENCHMARK
from gpucost_mlflow.report.model import Report
from gpucost_mlflow.tracking import limits, schema
from gpucost_mlflow.tracking.attempts_table import Attempt
from gpucost_mlflow.tracking.decision_record import Decided


def decided(report: Report, paths: Mapping[str, Path], campaigns: Mapping[str, str]) -> Decided:
    """The decision run of this report (its files at `paths`; `campaigns`: each campaign id its attempts ran in with
    its campaign run's id): named for what was decided, described by the decision note and the balance in short, with
    the chosen configuration's committed cost and forecast hours as metrics and the campaigns it read as tags."""
    choice = report.choice
    note = decision_text.decision_note(report, dict(campaigns), report.experiment_id,
                                       outside_campaigns(report.measured.attempts if report.measured else ()))
    tags = {schema.NOTE: note, schema.DECISION: "decided" if choice.decided else "none",
            schema.DECISION_CAMPAIGNS: ",".join(campaigns)[:limits.TAG_VALUE]}
    metrics = {}
    if choice.decided:
        chosen = choice.chosen
        tags[schema.DECISION_VARIANT] = " or ".join(dict.fromkeys(a.configuration.label for a in chosen))
        tags[schema.DECISION_DEVICE] = " or ".join(dict.fromkeys(a.configuration.device for a in chosen))
        tags[schema.DECISION_CURRENCY] = chosen[0].currency
        metrics = figures(chosen[0])
        if len(chosen) > 1:  # a tie at one cost: the one configuration the card runs (core/money/choice.py `to_run`)
            tags[schema.DECISION_RUN] = chosen[0].configuration.name
        if choice.equal:  # one device rented, the others named with their own plans, as the card says
            tags[schema.DECISION_RENT_DEVICE] = chosen[0].configuration.device
            tags[schema.DECISION_RENT_OFFER] = chosen[0].plan.describe()[:limits.TAG_VALUE]
            tags[schema.DECISION_RUN] = chosen[0].configuration.name
            tags[schema.DECISION_EQUAL] = "; ".join(f"{a.configuration.name}: {a.plan.describe()}"
                                                    for a in choice.equal)[:limits.TAG_VALUE]
    named = short.names([a.configuration for a in report.assessments]).of
    found = report.decided.doubt
    if found is not None:
        tags[schema.DECISION_RENT_DEVICE] = found.rent.configuration.device
        tags[schema.DECISION_RENT_OFFER] = found.plan.describe()[:limits.TAG_VALUE]
        tags[schema.DECISION_RUN] = found.fastest.configuration.name
    metrics.update(candidate_figures({named(a.configuration): a for a in choice.chosen or choice.undecided},
                                     found.in_doubt if found else None))
    metrics.update(measuring_figures(report))
    if report.spent_price is not None:
        tags[schema.MEASURING_PRICED] = report.spent_price.words[:limits.TAG_VALUE]
    held = confirmed.said(report)
    if held is not None:
        tags[schema.DECISION_CONFIRMATION] = held.tag[:limits.TAG_VALUE]
    if report.what_if or report.example_prices:
        tags[schema.DECISION_WHAT_IF] = decision_text.WHAT_IF_PROTOCOL if report.what_if else "example prices"
    params = {schema.DECISION_CATALOG: report.catalog[:limits.PARAM_VALUE], **deadline_params(report),
              schema.DECISION_EXPERIMENT: report.experiment}
    name = decision_text.decision_name(choice, report.example_prices, bool(report.what_if), named,
                                       held.word if held is not None and choice.decided else "")
    currencies = {a.currency for a in report.assessments if a.plan is not None}
    return Decided(name, report.what_if_digest or report.protocol_digest, tags, params, metrics, list(paths.values()),
                   standings(report), committed(report), currencies.pop() if len(currencies) == 1 else "",
                   confirmed.run_verdicts(report))


def deadline_params(report: Report) -> dict[str, str]:
    """The deadline as the protocol declares it: a date-time, or under `plan.start: at_report` the rule ('96 h after
    the report's reading') and the moment it was read, to the minute, never a fixed date-time to the second."""
    if not report.start_at_report or report.read_at is None or report.deadline == NO_DEADLINE:
        return {schema.DECISION_DEADLINE: report.deadline}
    hours = (dt.datetime.fromisoformat(report.deadline) - report.read_at).total_seconds() / 3600
    return {schema.DECISION_DEADLINE: f"{hours:g} h after the report's reading (plan.start: {AT_REPORT})",
            schema.DECISION_READ_AT: report.read_at.isoformat(timespec="minutes")}


def outside_campaigns(attempts: Sequence[Attempt]) -> int:
    """Benchmark passes run by hand, outside any campaign (a confirmation or deliverable run is never in one)."""
    return sum(a.role == BENCHMARK and not a.place.campaign_id for a in attempts)


def _runs(report: Report, a: Assessment) -> list[str]:
    """The run ids of one assessed configuration's benchmark attempts ([] for a report without its attempts)."""
    return report.measured.runs_of(a.configuration) if report.measured is not None else []


def committed(report: Report) -> dict[str, tuple[str, float]]:
    """Each pass's run id with its configuration's committed cost in this decision (priced ones that can be committed
    to: report/standing.py, `withheld`); none under a what-if protocol, which is not the experiment's decision."""
    if report.what_if or not len(report.attempts):
        return {}
    found = {}
    for a in report.assessments:
        if a.plan is not None and not report.decided.withheld(a):
            amount = (schema.in_currency(schema.PASS_COMMITTED, a.currency), float(a.committed))
            found.update(dict.fromkeys(_runs(report, a), amount))
    return found


def standings(report: Report) -> dict[str, str]:
    """Each pass's run id with its configuration's standing in this decision (chosen, tied, runner-up, rejected, ...:
    report/standing.py), `· what-if` added under example prices; none under a what-if protocol, which is not the
    experiment's decision."""
    if report.what_if or not len(report.attempts):
        return {}
    found = {}
    for a in report.assessments:
        word = decision_text.standing_tag(standing.role(a, report.choice), report.example_prices)
        found.update(dict.fromkeys(_runs(report, a), word))
    return found


def _shown(value: Decimal | float, digits: int) -> float:
    """value as the UI should show it, half up: `digits` significant digits for a small one (4.139373 h -> 4.14,
    0.0012345 USD -> 0.001235, never rounded to 0), two decimals once that keeps more (1234.567 h -> 1234.57)."""
    exact = Decimal(str(value))
    if exact == 0 or abs(exact) >= 10 ** (digits - 2):
        return float(exact.quantize(Decimal("0.01"), ROUND_HALF_UP))
    return float(exact.quantize(Decimal(1).scaleb(exact.adjusted() - digits + 1), ROUND_HALF_UP))


def figures(chosen: Assessment) -> dict[str, float]:
    """The decision run's metrics for its chosen configuration, named with their unit (money in the plan's currency
    code, hours in _h) and rounded as the UI shows them: money to the cent, unit costs to 4 significant digits and
    hours to 3 (`_shown`); a figure the assessment lacks is left out, never 0."""
    currency = chosen.currency
    money_totals = {schema.COMMITTED_COST: chosen.committed, schema.POSSIBLE_SAVING: chosen.saving}
    unit_costs = {schema.COST_PER_MILLION_INPUTS: chosen.cost_per_million_inputs,
                  schema.COST_PER_MILLION_OUTPUT_TOKENS: chosen.cost_per_million_output_tokens}
    found = {schema.in_currency(key, currency): _shown(value, 2) for key, value in money_totals.items()
             if value is not None}
    found.update({schema.in_currency(key, currency): _shown(value, 4) for key, value in unit_costs.items()
                  if value is not None})
    hours = {schema.FORECAST_HOURS: chosen.forecast_hours, schema.FORECAST_HOURS_SLOWEST: chosen.forecast.high_hours}
    found.update({key: _shown(value, 3) for key, value in hours.items() if value is not None})
    if chosen.spare:
        found[schema.SPARE_DELIVERABLES] = float(chosen.spare.spare)
    return found


def measuring_figures(report: Report) -> dict[str, float]:
    """The price of measuring (report/measuring.py): the hours the campaigns it read recorded (`measuring_h`) and,
    for a decided report, their cost at the committed plan's offer in its currency (`measuring_cost_usd`); a figure
    not priced is left out, never 0 (the tag gpucost.measuring.priced says why)."""
    found = {}
    if report.spent is not None:
        found[schema.MEASURING_HOURS] = _shown(report.spent.hours, 3)
    price = report.spent_price
    if price is not None and price.amount is not None:
        found[schema.in_currency(schema.MEASURING_COST, price.currency)] = _shown(price.amount, 2)
    return found


def candidate_figures(candidates: dict[str, Assessment], in_doubt=None) -> dict[str, float]:
    """Every decision's metrics, undecided and nothing priced included: how many candidates, and per candidate (by
    the report's short name, as a metric name may hold it) its committed cost and slowest-pass forecast hours, and
    the money in doubt."""
    found: dict[str, float] = {schema.CANDIDATES: float(len(candidates))}
    parts = schema.metric_parts(list(candidates))
    for name, a in candidates.items():
        if a.committed is not None:
            found[f"{schema.in_currency(schema.COMMITTED_COST, a.currency)}/{parts[name]}"] = _shown(a.committed, 2)
        if a.forecast is not None:
            found[f"{schema.FORECAST_HOURS_SLOWEST}/{parts[name]}"] = _shown(a.forecast.high_hours, 3)
    if in_doubt is not None and candidates:
        found[schema.in_currency(schema.IN_DOUBT, next(iter(candidates.values())).currency)] = _shown(in_doubt, 2)
    return found
