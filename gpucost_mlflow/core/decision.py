"""Feasibility, the campaign-plan forecast, committed cost per configuration and the decision note."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from decimal import Decimal

from gpucost_mlflow.core import costs
from gpucost_mlflow.core.catalog import Catalog, Package
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

    @property
    def name(self) -> str:
        return f"{self.variant} on {self.device}"

    @property
    def counts(self) -> dict[str, int]:
        return {s: self.statuses.count(s) for s in ("accepted", "rejected", "failed", "excluded", "pending")}


@dataclass
class Assessment:
    configuration: Configuration
    feasible: bool
    feasibility: str
    forecast_hours: float | None = None
    forecast_end: dt.datetime | None = None
    meets_deadline: bool | None = None
    package: Package | None = None
    committed: Decimal | None = None
    priced: str = ""
    cost_per_validated: Decimal | None = None
    notes: list = field(default_factory=list)


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


def forecast(config: Configuration, plan: dict, expected_deliverables: int) -> float | None:
    """Window hours = setup + waiting + (1 + restarts) x (load + warm-up) + deliverables x (pass + eval + export)."""
    if config.durations.median is None:
        return None
    m = config.medians
    startup = m.get("load_s", 0.0) + m.get("warmup_s", 0.0)
    per_corpus = config.durations.median + m.get("eval_s", 0.0) + m.get("export_s", 0.0)
    seconds = (1 + plan["planned_restarts"]) * startup + expected_deliverables * per_corpus
    return plan["setup_hours"] + plan["waiting_hours"] + seconds / 3600


def covering_package(catalog: Catalog, device: str, hours: float) -> Package | None:
    """The shortest package for this measured device whose length covers the window."""
    fitting = [p for p in catalog.for_device(device) if p.days * 24 >= hours]
    return min(fitting, key=lambda p: (p.days, p.price_per_lot)) if fitting else None


def assess(configs: list[Configuration], catalog: Catalog, plan: dict, deadline: dt.datetime,
           expected_deliverables: int) -> list[Assessment]:
    results = []
    for config in configs:
        ok, why = feasibility(config)
        item = Assessment(config, ok, why)
        item.forecast_hours = forecast(config, plan, expected_deliverables)
        if item.forecast_hours is not None and plan.get("start") is not None:
            item.forecast_end = plan["start"] + dt.timedelta(hours=item.forecast_hours)
            item.meets_deadline = item.forecast_end <= deadline
        if not catalog.for_device(config.device):
            item.priced = f"not priced: {config.device} has no package in {catalog.version} ({catalog.path})"
        elif item.forecast_hours is None:
            item.priced = "not priced: no completed pass to size the window"
        else:
            package = covering_package(catalog, config.device, item.forecast_hours)
            if package is None:
                item.priced = (f"not priced: no single {config.device} package in {catalog.version} covers "
                               f"{item.forecast_hours:.1f} h; budget consecutive packages explicitly")
            else:
                held = costs.commit(package, max(1, math.ceil(1 / package.gpus_per_lot)))
                item.package, item.committed = package, held.total
                item.priced = f"{package.gpu} {package.days}-day package x {held.lots}: {costs.money(held.total, package.currency)}"
                item.cost_per_validated = costs.cost_per_validated_corpus(held.total, config.accepted_deliverables)
        results.append(item)
    return results


def decide(assessments: list[Assessment], expected_deliverables: int, corpus_size: int) -> str:
    """The decision note: chosen configuration, load covered and reason; or 'no decision' with the reason."""
    if not any("accepted" in a.configuration.statuses for a in assessments):
        return "No decision: nothing accepted (no pass completed the corpus with every check passed)."
    feasible = [a for a in assessments if a.feasible]
    if not feasible:
        return "No decision: no configuration is feasible (" + "; ".join(f"{a.configuration.name}: {a.feasibility}" for a in assessments) + ")."
    priced = [a for a in feasible if a.committed is not None]
    if not priced:
        return "No decision: nothing priced (" + "; ".join(sorted({a.priced for a in feasible})) + ")."
    timely = [a for a in priced if a.meets_deadline]
    if not timely:
        return "No decision: deadline missed (no priced feasible configuration's forecast ends before the deadline)."
    cheapest = min(a.committed for a in timely)
    best = [a for a in timely if a.committed == cheapest]
    load = f"{expected_deliverables} corpus(es) of {corpus_size} inputs"
    if len(best) > 1:
        best.sort(key=lambda a: a.configuration.durations.median)
        separations = [separate(best[0].configuration.name, best[0].configuration.durations.values,
                                other.configuration.name, other.configuration.durations.values) for other in best[1:]]
        if not all(s.decided for s in separations):
            names = ", ".join(a.configuration.name for a in best)
            return (f"No decision: undecided between {names}: the same committed cost "
                    f"({costs.money(cheapest, best[0].package.currency)}) and durations that do not separate; "
                    f"{separations[0].verdict}.")
    chosen = best[0]
    others = sorted((a for a in timely if a is not chosen), key=lambda a: a.committed)
    versus = f"; next: {others[0].configuration.name} at {costs.money(others[0].committed, others[0].package.currency)}" if others else ""
    return (f"Decision: {chosen.configuration.name}, {chosen.priced}, covers {load} within a forecast window of "
            f"{chosen.forecast_hours:.1f} h ending {chosen.forecast_end.isoformat(timespec='minutes')} (deadline met). Reason: the lowest "
            f"committed cost among feasible configurations that meet the deadline{versus}.")
