"""Each configuration assessed: feasibility, stability, the whole-rental forecast, its deadline and its covering
plans, under the rules the protocol and the catalog fix (`core/money/choice.py` chooses among them)."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import TYPE_CHECKING

from gpucost_mlflow.core.measurement.stats import DEFAULT_CONFIDENCE, Stability, stability, under_sampled
from gpucost_mlflow.core.money import costs, units
from gpucost_mlflow.core.money.catalog import Catalog
from gpucost_mlflow.core.money.configuration import Configuration, ExcludedPass  # noqa: F401 (report/configurations)
from gpucost_mlflow.core.money.feasibility import NOT_COUNTED, feasibility
from gpucost_mlflow.core.money.forecast import Delivery, Forecast, forecast
from gpucost_mlflow.core.money.plans import NO_WORK, Plan, Work, covering_plans, refusals, to_hours
from gpucost_mlflow.core.money.startups import AuditRule, audit_rule, lanes_of

if TYPE_CHECKING:
    from gpucost_mlflow.core.inputs.protocol import Protocol


@dataclass(frozen=True)
class Rules:
    """What the protocol and the catalog fix before any timing: kept with each assessment so the decision can
    re-assess a configuration as it would stand without an exclusion."""

    catalog: Catalog
    plan: dict | None
    deadline: dt.datetime | None
    expected_deliverables: int
    required_passes: int | None = None  # passes_per_variant: fewer countable passes is under-sampled
    max_spread_ratio: float | None = None  # max/min of a configuration's own durations above it: unstable
    side_by_side: bool = False  # deliverables may run side by side on a lot's idle GPUs
    inputs_per_deliverable: int | None = None  # the protocol's corpus.size: the unit costs' denominator
    today: dt.date | None = None  # the report's date: the age of a price
    max_price_age_days: int | None = None
    confidence: float = DEFAULT_CONFIDENCE  # the separation test's at this look (core/measurement/stats.py `per_look`)
    looks: int = 1  # the looks at the data the protocol's confidence is shared over (core/campaign/settle.py `looks`)
    per_child: int | None = None  # deliverables.per_child: corpora one child processes (None: all of them)
    audit: AuditRule | None = None  # deliverables.audit: the reference variant's child per delivered corpus

    @classmethod
    def of(cls, protocol: Protocol, catalog: Catalog, today: dt.date, confidence: float = DEFAULT_CONFIDENCE,
           looks: int = 1) -> Rules:
        """The rules a protocol and a catalog fix, the separation test's confidence shared over `looks` looks (the
        report's and the race's, core/campaign/race.py, alike)."""
        deliverables, corpus = protocol.deliverables, protocol.corpus_size
        return cls(catalog, protocol.plan, protocol.deadline, deliverables["expected"],
                   required_passes=protocol.passes_per_variant, max_spread_ratio=protocol.max_spread_ratio,
                   side_by_side=bool(deliverables.get("side_by_side")), inputs_per_deliverable=corpus, today=today,
                   max_price_age_days=protocol.max_price_age_days, confidence=confidence, looks=looks,
                   per_child=deliverables["per_child"],
                   audit=audit_rule(deliverables["audit"], protocol.acceptance.reference_variant, corpus))

    @property
    def start(self) -> dt.datetime | None:
        """The plan's declared start (None when not declared)."""
        return (self.plan or {}).get("start")

    @property
    def deadline_hours(self) -> float | None:
        """Hours from the planned start to the deadline (None when either is not declared)."""
        if self.deadline is None or self.start is None:
            return None
        return (self.deadline - self.start).total_seconds() / 3600


@dataclass
class Assessment:
    """One configuration judged: feasibility, stability, the whole-rental forecast, its deadline and its covering
    plans; the committed plan covers the slowest-pass forecast, the median one is the possible saving."""

    configuration: Configuration
    feasible: bool
    feasibility: str
    forecast: Forecast | None = None
    forecast_note: str = ""
    forecast_end: dt.datetime | None = None
    forecast_end_high: dt.datetime | None = None
    deadline_status: str = ""
    meets_deadline: bool | None = None
    plans: list[Plan] = field(default_factory=list)  # covering the slowest-pass window, cheapest first
    median_plans: list[Plan] = field(default_factory=list)  # covering the median window
    priced: str = ""
    cost_per_validated: Decimal | None = None
    stability: Stability | None = None
    under_sampled: str = ""
    rules: Rules | None = None
    work: Work = NO_WORK  # the planned volume and measured tokens a per-token row prices
    refused: list[str] = field(default_factory=list)  # rows of its device that cannot price the work, each with why
    what_if: list[str] = field(default_factory=list)  # rows naming its device that price only work measured elsewhere

    @property
    def plan(self) -> Plan | None:
        """The committed plan: the cheapest covering the slowest-pass forecast (on a tie the shorter one)."""
        return self.plans[0] if self.plans else None

    @property
    def median_plan(self) -> Plan | None:
        return self.median_plans[0] if self.median_plans else None

    @property
    def committed(self) -> Decimal | None:
        return self.plan.total if self.plan else None

    @property
    def saving(self) -> Decimal | None:
        """What the median plan would save if the work ran at the median pass (None: no saving possible)."""
        if self.plan is None or self.median_plan is None or self.median_plan.total >= self.plan.total:
            return None
        return self.plan.total - self.median_plan.total

    @property
    def currency(self) -> str:
        return self.plan.currency if self.plan else ""

    def _per_inputs(self, deliverables: int, per=units.per_1000_inputs) -> Decimal | None:
        inputs = self.rules.inputs_per_deliverable if self.rules else None
        if self.committed is None or not inputs:
            return None
        return per(self.committed, deliverables, inputs)

    @property
    def cost_per_million_inputs(self) -> Decimal | None:
        """The planning budget: the committed cost per million inputs of the declared volume (None when not priced)."""
        return self._per_inputs(self.rules.expected_deliverables, units.per_million_inputs) if self.rules else None

    @property
    def validated_cost_per_1000_inputs(self) -> Decimal | None:
        """The committed cost per 1,000 inputs of accepted deliverables: undefined (None) until one is accepted."""
        return self._per_inputs(self.configuration.accepted_deliverables)

    @property
    def cost_per_million_output_tokens(self) -> Decimal | None:
        """The committed cost per million output tokens of the declared volume, from the measured output tokens per
        input (generation only; `unit_reason` says why not)."""
        inputs = self.rules.inputs_per_deliverable if self.rules else None
        if self.committed is None or not inputs:
            return None
        return units.per_million_tokens(self.committed, self.rules.expected_deliverables, inputs,
                                        self.configuration.output_tokens_per_input)

    @property
    def tokens_reason(self) -> str:
        """Why the cost per million output tokens is empty ('' when it is there)."""
        if self.committed is None:
            return f"not priced ({self.priced})"
        if self.configuration.output_tokens_per_input is None:
            return units.NO_TOKENS
        return ""

    @property
    def spare(self) -> units.Spare | None:
        """The deliverables the committed plan holds at the slowest pass, beyond the declared ones."""
        if self.plan is None or self.forecast is None or not self.plan.offer.kind.spare_capacity:
            return None  # a bill per token grows with each deliverable: no paid hours hold more
        return units.spare(self.forecast, self.plan)

    @property
    def spare_cost_per_million_inputs(self) -> Decimal | None:
        """The planning budget per million inputs were the plan filled to its capacity."""
        found = self.spare
        return self._per_inputs(found.capacity, units.per_million_inputs) if found and found.capacity else None

    @property
    def forecast_hours(self) -> float | None:
        return self.forecast.hours if self.forecast else None

    @property
    def withheld(self) -> str:
        """Why no committed price is shown for it anywhere ('' when one may be): a plan for a configuration that
        cannot deliver the result (infeasible, under-sampled, quality not shown, unstable, late) prices nothing."""
        if not self.feasible:
            return self.feasibility
        if not self.stable:
            return self.unstable
        if self.meets_deadline is False:
            return f"misses the deadline ({self.deadline_status})"
        return ""

    @property
    def stable(self) -> bool:
        return self.stability is None or self.stability.stable

    @property
    def unstable(self) -> str:
        """'unstable: re-measure (max/min 4.32 > 1.5)', or '' for a stable configuration."""
        if self.stable:
            return ""
        return f"unstable: re-measure (max/min {self.stability.ratio:.2f} > {self.stability.limit:g})"

    def outliers(self) -> str:
        """The passes that make it unstable, each with the cause seen beside it, for the decision note."""
        c = self.configuration
        parts = []
        for i in self.stability.outliers if self.stability else ():
            run = c.pass_runs[i][:8] if i < len(c.pass_runs) else "?"
            cause = c.pass_causes[i] if i < len(c.pass_causes) and c.pass_causes[i] else NO_CAUSE
            parts.append(f"run {run} at {c.durations.values[i]:.3f} s ({cause})")
        return "; ".join(parts)


NOT_COMMITTED = "not committed"  # what stands where a price would: a configuration that cannot be committed to


def unpriced(a: Assessment, reason: str) -> Assessment:
    """The assessment as every table, file and description shows a configuration that cannot be committed to: no
    plan and no figure priced from one, "not committed: <reason>" where its plan was (nothing infeasible priced)."""
    return replace(a, plans=[], median_plans=[], refused=[], cost_per_validated=None,
                   priced=f"{NOT_COMMITTED}: {reason}")


NO_CAUSE = "no cause recorded: no other pass ran beside it; load from other processes is not recorded"


NO_PLAN = "no plan: no forecast"
NO_DEADLINE = "no deadline declared"


def _deadline(item: Assessment, plan: dict, deadline: dt.datetime | None) -> None:
    """Place the forecast on the calendar and compare its slow end with the deadline, saying why when it cannot."""
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
        item.meets_deadline = item.forecast_end_high <= deadline
        if item.meets_deadline:
            item.deadline_status = "met"
        elif item.forecast_end <= deadline:
            item.deadline_status = "missed at the slowest-pass forecast (met at the median)"
        else:
            item.deadline_status = "missed"


def streams(rules: Rules, offers: list, gpus: int) -> tuple[int, str]:
    """Deliverables processed at once, and the assumption said: one after another unless the protocol declares
    them side by side on the GPUs a lot holds beyond the configuration's own."""
    inside = f" (its {gpus} GPUs' parallelism is inside its measured pass)" if gpus > 1 else ""
    if not rules.side_by_side or not offers:
        return 1, "one deliverable after another" + inside
    per_lot = min(o.gpus_per_lot for o in offers)
    held = math.ceil(gpus / per_lot) * per_lot
    count = max(1, held // gpus)
    if count == 1:
        return 1, f"one deliverable after another (the lot's {held} GPU(s) hold one at a time){inside}"
    return count, f"{count} deliverables side by side on the lot's {held} GPUs (deliverables.side_by_side){inside}"


def assess_one(config: Configuration, rules: Rules) -> Assessment:
    """One configuration against the rules: feasibility, stability, forecast, deadline and covering plans."""
    ok, why = feasibility(config, rules.required_passes)
    item = Assessment(config, ok, why, rules=rules)
    counted = len([s for s in config.statuses if s not in NOT_COUNTED])
    item.under_sampled = under_sampled(counted, rules.required_passes) if "under-sampled" in why else ""
    if rules.max_spread_ratio is not None:
        item.stability = stability(config.durations.values, rules.max_spread_ratio)
    offers, item.what_if = measured_there(rules.catalog.for_device(config.device), config)
    if rules.plan is None:
        item.forecast_note = NO_PLAN
    else:
        count, note = streams(rules, offers, config.gpus)
        item.forecast = forecast(rules.plan, rules.expected_deliverables, config.durations, config.medians,
                                 config.attempt_spans, config.walls_estimated,
                                 Delivery(count, note, rules.per_child, lanes_of(config),
                                          rules.audit and rules.audit.on(config)))
        if item.forecast is None:
            item.forecast_note = "no completed pass to size the window"
    _deadline(item, rules.plan or {}, rules.deadline)
    stale = rules.catalog.stale_for(config.device)
    if not offers and stale:
        item.priced = (f"not priced: stale price ({max(p.age_days(rules.today) for p in stale)} days) for "
                       f"{config.device} in {rules.catalog.version} (max_price_age_days {rules.max_price_age_days}; "
                       "--allow-stale-prices prices it anyway)")
    elif not offers and item.what_if:
        item.priced = (f"not priced: only hosted per-token rows name {config.device} in {rules.catalog.version}, and "
                       "its passes did not run through their endpoint (a what-if, never committed)")
    elif not offers:
        item.priced = f"not priced: {config.device} has no package in {rules.catalog.version} ({rules.catalog.path})"
    elif item.forecast is None:
        item.priced = f"not priced: {item.forecast_note}"
    else:
        item.work = work_of(config, rules, item.forecast)
        item.refused = refusals(offers, item.work)
        slowest, median = item.forecast.per_deliverable_h[2], item.forecast.per_deliverable_h[1]
        item.plans = covering_plans(offers, to_hours(item.forecast.high_hours), config.gpus, slowest, item.work)
        item.median_plans = covering_plans(offers, to_hours(item.forecast.hours), config.gpus, median, item.work)
        if item.plan is None:
            item.priced = "not priced: " + "; ".join(item.refused)
            return item
        item.priced = item.plan.describe()
        item.cost_per_validated = costs.cost_per_validated_corpus(item.plan.total, config.accepted_deliverables)
    return item


WHAT_IF = "a what-if outside the choice, never committed"


def measured_there(offers: list, config: Configuration) -> tuple[list, list[str]]:
    """The rows of the configuration's device that may price it, and a what-if line for each that may not: a hosted
    per-token tier prices only work its own endpoint did, never passes timed and judged on a machine here."""
    kept, what_if = [], []
    for offer in offers:
        why = offer.kind.elsewhere(offer, config.device, config.variant)
        if why:
            what_if.append(f"{offer.describe()} for {config.name}: {WHAT_IF}: {why}")
        else:
            kept.append(offer)
    return kept, what_if


def work_of(config: Configuration, rules: Rules, forecast: Forecast) -> Work:
    """What a plan is bought for beyond its window: the declared volume, the tokens the accepted passes counted per
    input, the declared setup and the hours to the deadline (a per-token row prices it, a batch tier's window is
    bounded by it)."""
    return Work(rules.expected_deliverables, rules.inputs_per_deliverable, config.input_tokens_per_input,
                config.output_tokens_per_input, forecast.setup_h, rules.deadline_hours)


def assess(configs: list[Configuration], rules: Rules) -> list[Assessment]:
    """Feasibility, stability, forecast, deadline and every covering plan of each configuration (its device's rows)."""
    rules = replace(rules, audit=rules.audit.measure(configs)) if rules.audit else rules
    return [assess_one(config, rules) for config in configs]
