"""Feasibility, the whole-rental forecast, the cheapest covering plan per configuration and the decision note."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal

from gpucost_mlflow.core import costs
from gpucost_mlflow.core.breakeven import BreakEven, Priced, break_even
from gpucost_mlflow.core.catalog import Catalog
from gpucost_mlflow.core.forecast import Forecast, forecast
from gpucost_mlflow.core.plans import Plan, covering_plans, to_hours
from gpucost_mlflow.core.stats import Durations, separate


@dataclass
class Configuration:
    """One allowed configuration as measured: a variant on a device, with its attempts' figures."""

    device: str
    variant: str
    statuses: list[str]
    durations: Durations
    medians: dict  # load_s, warmup_s, eval_s, export_s medians over completed passes
    accepted_deliverables: int = 0
    attempt_walls: tuple[float, ...] = ()  # run wall time (s) of every benchmark attempt on this device
    walls_estimated: int = 0  # of those, attempts with no end time, counted by their recorded stage times
    gpus: int = 1  # GPUs one pass uses (its parallelism is inside the measured pass_s)
    identity: dict = field(default_factory=dict)  # model revision, corpus fingerprint, software stack
    distinction: str = ""  # what sets it apart from other configurations of the same variant and device

    @property
    def label(self) -> str:
        """The variant, with what sets this configuration apart when the variant has several on the device."""
        return self.variant + (f" [{self.distinction}]" if self.distinction else "")

    @property
    def name(self) -> str:
        return f"{self.label} on {self.device}"

    @property
    def counts(self) -> dict[str, int]:
        return {s: self.statuses.count(s) for s in ("accepted", "rejected", "failed", "excluded", "pending")}


@dataclass
class Assessment:
    """One configuration judged: feasibility, the whole-rental forecast, its deadline and its covering plans."""

    configuration: Configuration
    feasible: bool
    feasibility: str
    forecast: Forecast | None = None
    forecast_note: str = ""
    forecast_end: dt.datetime | None = None
    forecast_end_high: dt.datetime | None = None
    deadline_status: str = ""
    meets_deadline: bool | None = None
    plans: list[Plan] = field(default_factory=list)
    priced: str = ""
    cost_per_validated: Decimal | None = None

    @property
    def plan(self) -> Plan | None:
        """The cheapest covering plan (on a tie the shorter one)."""
        return self.plans[0] if self.plans else None

    @property
    def committed(self) -> Decimal | None:
        return self.plan.total if self.plan else None

    @property
    def currency(self) -> str:
        return self.plan.currency if self.plan else ""

    @property
    def forecast_hours(self) -> float | None:
        return self.forecast.hours if self.forecast else None


def feasibility(config: Configuration) -> tuple[bool, str]:
    """Eligible only if it completed the whole corpus with every check passed, in every non-excluded attempt."""
    counted = [s for s in config.statuses if s != "excluded"]
    if not counted:
        return False, "no attempt"
    if "failed" in counted:
        return False, f"{counted.count('failed')} failed attempt(s) (did not complete the corpus)"
    if "rejected" in counted:
        return False, f"{counted.count('rejected')} rejected attempt(s) (a check failed)"
    if "pending" in counted:
        return False, "pending reference: not judged against the reference yet"
    return True, f"{len(counted)} of {len(counted)} attempts accepted"


NO_PLAN = "no plan: no forecast"
NO_DEADLINE = "no deadline declared"


def _deadline(item: Assessment, plan: dict, deadline: dt.datetime | None) -> None:
    """Place the forecast on the calendar and compare it with the deadline, saying why when it cannot."""
    if item.forecast is not None and plan.get("start") is not None:
        item.forecast_end = plan["start"] + dt.timedelta(hours=item.forecast.hours)
        item.forecast_end_high = plan["start"] + dt.timedelta(hours=item.forecast.high_hours)
    if deadline is None:
        item.deadline_status = NO_DEADLINE
    elif item.forecast is None:
        item.deadline_status = f"not checked: {item.forecast_note}"
    elif item.forecast_end is None:
        item.deadline_status = "not checked: no plan.start declared"
    else:
        item.meets_deadline = item.forecast_end <= deadline
        item.deadline_status = "met" if item.meets_deadline else "missed"
        if item.meets_deadline and item.forecast_end_high > deadline:
            item.deadline_status = "met at the median forecast; the slowest-pass forecast ends after it"


def assess(configs: list[Configuration], catalog: Catalog, plan: dict | None, deadline: dt.datetime | None,
           expected_deliverables: int) -> list[Assessment]:
    """Feasibility, forecast, deadline and every covering plan of each configuration (its device's catalog rows)."""
    results = []
    for config in configs:
        ok, why = feasibility(config)
        item = Assessment(config, ok, why)
        if plan is None:
            item.forecast_note = NO_PLAN
        else:
            item.forecast = forecast(plan, expected_deliverables, config.durations, config.medians,
                                     config.attempt_walls, config.walls_estimated)
            if item.forecast is None:
                item.forecast_note = "no completed pass to size the window"
        _deadline(item, plan or {}, deadline)
        offers = catalog.for_device(config.device)
        if not offers:
            item.priced = f"not priced: {config.device} has no package in {catalog.version} ({catalog.path})"
        elif item.forecast is None:
            item.priced = f"not priced: {item.forecast_note}"
        else:
            item.plans = covering_plans(offers, to_hours(item.forecast.hours), config.gpus)
            item.priced = item.plan.describe()
            item.cost_per_validated = costs.cost_per_validated_corpus(item.plan.total, config.accepted_deliverables)
        results.append(item)
    return results


def _best(items: list[Assessment]) -> Assessment:
    return min(items, key=lambda a: (a.committed, a.configuration.durations.median))


def break_evens(assessments: list[Assessment]) -> list[BreakEven]:
    """For each pair of priced devices, where the order of their cheapest feasible configurations flips."""
    by_device: dict[str, list[Assessment]] = {}
    for a in assessments:
        if a.feasible and a.plan is not None:
            by_device.setdefault(a.configuration.device, []).append(a)
    best = [_best(items) for items in by_device.values()]
    result = []
    for i, first in enumerate(best):
        for second in best[i + 1:]:
            priced = [Priced(a.configuration.name, a.forecast, tuple(p.offer for p in a.plans), a.configuration.gpus)
                      for a in (first, second)]
            result.append(break_even(priced[0], priced[1], first.forecast.deliverables))
    return result


@dataclass
class Choice:
    """What the decision rule settled: the chosen configuration (with any tied at its cost), or why there is none."""

    chosen: list[Assessment] = field(default_factory=list)  # empty: no decision; several: a tie
    none: str = ""  # the short reason there is no decision ("nothing accepted")
    detail: str = ""  # what the note says after the short reason
    tie: str = ""  # the separation verdict behind a tie
    others: list[Assessment] = field(default_factory=list)  # the other timely configurations, cheapest first

    @property
    def decided(self) -> bool:
        return bool(self.chosen)


def choose(assessments: list[Assessment], deadline_declared: bool = True) -> Choice:
    """The cheapest priced feasible configuration that meets the deadline, ties kept together; or why none."""
    if not assessments:
        return Choice(none="no benchmark pass in this experiment")
    if not any("accepted" in a.configuration.statuses for a in assessments):
        return Choice(none="nothing accepted", detail=" (no pass completed the corpus with every check passed)")
    feasible = [a for a in assessments if a.feasible]
    if not feasible:
        return Choice(none="no configuration is feasible",
                      detail=" (" + "; ".join(f"{a.configuration.name}: {a.feasibility}" for a in assessments) + ")")
    if all(a.forecast_note == NO_PLAN for a in feasible):
        return Choice(none=NO_PLAN, detail=" (declare `plan:` in the protocol: setup and waiting hours, restarts, start)")
    priced = [a for a in feasible if a.plan is not None]
    if not priced:
        return Choice(none="nothing priced", detail=" (" + "; ".join(sorted({a.priced for a in feasible})) + ")")
    if deadline_declared:
        if all(a.forecast_end is None for a in priced):
            return Choice(none="the deadline cannot be checked", detail=" (no plan.start declared in the protocol)")
        timely = [a for a in priced if a.meets_deadline]
        if not timely:
            return Choice(none="deadline missed",
                          detail=" (no priced feasible configuration's forecast ends before the deadline)")
    else:
        timely = priced
    cheapest = min(a.committed for a in timely)
    best = sorted((a for a in timely if a.committed == cheapest), key=lambda a: a.configuration.durations.median)
    chosen = best[0]
    # Configurations at the same lowest cost whose durations do not separate from the fastest are tied: the
    # money is decided, the speed ranking is not (PROTOCOL.md §6), so none of them is preferred over the others.
    unseparated = [(other, separation) for other in best[1:]
                   for separation in [separate(chosen.configuration.name, chosen.configuration.durations.values,
                                               other.configuration.name, other.configuration.durations.values)]
                   if not separation.decided]
    tied = [chosen] + [other for other, _ in unseparated]
    others = sorted((a for a in timely if a not in tied), key=lambda a: a.committed)
    return Choice(tied, tie=unseparated[0][1].verdict if unseparated else "", others=others)


def decide(assessments: list[Assessment], expected_deliverables: int, corpus_size: int,
           deadline_declared: bool = True) -> str:
    """The decision note: chosen configuration, plan, load covered and reason; or 'no decision' with the reason."""
    choice = choose(assessments, deadline_declared)
    if not choice.decided:
        return f"No decision: {choice.none}{choice.detail}."
    chosen, tied, others = choice.chosen[0], choice.chosen, choice.others
    load = f"{expected_deliverables:,} corpus(es) of {corpus_size:,} inputs"
    versus = f"; next: {others[0].configuration.name} at {costs.money(others[0].committed, others[0].currency)}" if others else ""
    f = chosen.forecast
    when = (f" ending {chosen.forecast_end.isoformat(timespec='minutes')}" if chosen.forecast_end else "")
    status = f"deadline {chosen.deadline_status}" if deadline_declared else NO_DEADLINE
    rule = "that meet the deadline" if deadline_declared else "(no deadline declared)"
    example = (f" Priced at an example price ({chosen.plan.offer.source}): a what-if, not a provider's quote."
               if chosen.plan.offer.example else "")
    head = f"Decision: {chosen.configuration.name}"
    why = f"the lowest committed cost among feasible configurations {rule}"
    if len(tied) > 1:
        head = "Decision (tied): " + " or ".join(a.configuration.name for a in tied)
        why += (f", reached equally by these {len(tied)} configurations whose durations do not separate "
                f"({choice.tie}); none is preferred on speed")
    return (f"{head}, {chosen.priced}, covers {load} within a forecast window of "
            f"{f.hours:,.1f} h (range {f.low_hours:,.1f}-{f.high_hours:,.1f} h){when} ({status}). Reason: {why}"
            f"{versus}.{example}")
