"""From a report's configurations to their summaries (their attempts' attributes), separability and the balance."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import pandas as pd

from gpucost_mlflow.core.inputs.variants import Variant
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.measurement import energy
from gpucost_mlflow.core.measurement.p_values import PValues
from gpucost_mlflow.core.measurement.stats import (
    DEFAULT_CONFIDENCE,
    Separation,
    separate,
    too_short,
)
from gpucost_mlflow.core.money import units
from gpucost_mlflow.core.money.decision import Assessment, Configuration
from gpucost_mlflow.core.names import (
    CPU_UTILISATION,
    ENERGY_NET_J,
    GPU_UTILISATION,
    MACRO_F1,
    MEASURED_TOTAL_S,
    MFU_PADDED,
    MFU_USEFUL,
    PADDED_FLOP_PER_S,
    PASS_S,
    USEFUL_FLOP_PER_S,
)
from gpucost_mlflow.report import next_batch, versus_reference
from gpucost_mlflow.report.measured import ReportAttempts, figures, median_of, recorded
from gpucost_mlflow.tracking.attempts_table import Attempt
from gpucost_mlflow.tracking.schema import COST_PER_MILLION_INPUTS as FORECAST_PER_MILLION
from gpucost_mlflow.tracking.schema import COST_PER_MILLION_OUTPUT_TOKENS as FORECAST_PER_MILLION_TOKENS

MEMORY = ("mem_peak_allocated_bytes", "mem_peak_reserved_bytes", "mem_peak_rss_bytes")
UTILISATION = (USEFUL_FLOP_PER_S, PADDED_FLOP_PER_S, MFU_USEFUL, MFU_PADDED)


@dataclass
class Summary:
    configuration: Configuration
    memory: dict
    memory_counter: str
    macro_f1: float | None
    quality_verdicts: dict
    utilisation: dict = field(default_factory=dict)
    mfu_reason: str = ""
    overlapped: int = 0  # counted durations whose measured clock overlapped another pass on the same host
    contended: int = 0  # counted durations during which other processes used more CPU than the protocol allows
    too_short: int = 0  # counted durations under a second: clock noise more than work (core/measurement/stats.py)
    throttled: int = 0  # counted durations during which the board reported a throttle reason
    starved: int = 0  # counted durations during which the device was busy less than the protocol's min_utilisation
    busy: dict = field(default_factory=dict)  # mean CPU / GPU utilisation of the completed passes (fractions)
    joules_per_pass: float | None = None  # median energy_j of the counted passes
    joules_per_validated: float | None = None  # median energy_j of the accepted passes (each one validated corpus)
    energy_reason: str = ""  # why either is empty, or the counter's flag
    joules_net_per_pass: float | None = None  # median energy_net_j: energy less the idle power over pass_s
    net_reason: str = ""  # why it is empty: no cooldown_s (no idle power), or no energy
    # Against the reference: its label agreement with the exact interval, and the answers changed by direction
    # ('agreement 98.60 % (exact interval 97.14-99.44 %); 3 lost, 1 gained ...'), '' when not compared.
    against_reference: str = ""
    next_batch: str = ""  # starved: the next batch size worth trying, or that it will not fit (report/next_batch.py)


def summaries(measured: ReportAttempts, configs: list[Configuration], bar: float | None = None) -> list[Summary]:
    """Memory peaks (largest per counter, never added) and quality per configuration; `bar`: the protocol's label
    agreement bar, said beside a rejected configuration's agreement."""
    result = []
    for config in configs:
        rows = measured.attempts_of(config)
        memory = {key: max(float(a.metrics[key]) for a in found) for key in MEMORY
                  if (found := [a for a in rows if recorded(a, key)])}
        counters = sorted({a.facts.memory_counter for a in rows if a.facts.memory_counter})
        verdicts = pd.Series([a.verdict.quality_verdict or "(none: failed)" for a in rows],
                             dtype=object).value_counts().to_dict()
        completed = [a for a in rows if recorded(a, PASS_S) and a.status != Status.EXCLUDED]
        utilisation = {key: value for key in UTILISATION if (value := median_of(completed, key)) is not None}
        reasons = sorted({a.mfu_reason for a in completed if a.mfu_reason}) or ([] if completed else
                                                                                ["no completed pass"])
        clocked = [a.metrics[MEASURED_TOTAL_S] if recorded(a, MEASURED_TOTAL_S) else a.metrics[PASS_S]
                   for a in completed]
        summary = Summary(config, memory, "; ".join(counters), median_of(rows, MACRO_F1), verdicts, utilisation,
                          "; ".join(reasons), sum(1 for a in completed if a.overlapped_with),
                          sum(1 for a in completed if a.facts.contended),
                          sum(1 for value in clocked if too_short(float(value))),
                          sum(1 for a in completed if a.facts.throttled), sum(1 for a in completed if a.facts.starved),
                          {key: float(figures(completed, key).mean()) for key in (CPU_UTILISATION, GPU_UTILISATION)
                           if any(recorded(a, key) for a in completed)})
        _energy(summary, completed)
        summary.against_reference = versus_reference.said(rows, bar)
        if summary.starved:
            summary.next_batch = next_batch.text(next_batch.batch_of(rows), memory, config.device)
        result.append(summary)
    return result


def _energy(summary: Summary, completed: list[Attempt]) -> None:
    """Joules per pass and per validated corpus (core/measurement/energy.py), each empty with the reason."""
    summary.joules_per_pass = median_of(completed, energy.ENERGY_METRIC)
    accepted = [float(a.metrics[energy.ENERGY_METRIC]) if recorded(a, energy.ENERGY_METRIC) else None
                for a in completed if a.status == Status.ACCEPTED]
    summary.joules_per_validated, why = energy.joules_per_validated_corpus(accepted)
    reasons = sorted({a.energy_reason for a in completed if a.energy_reason})
    summary.energy_reason = "; ".join(reasons) or why or ("" if completed else "no completed pass")
    summary.joules_net_per_pass = median_of(completed, ENERGY_NET_J)
    if summary.joules_net_per_pass is None:
        summary.net_reason = (summary.energy_reason if summary.joules_per_pass is None else
                              "no idle power measured: the protocol sets no cooldown_s, or the cooldown did not "
                              "resolve it (docs/pass.md)")


Pair = tuple[str, str, Configuration, str, Configuration]  # (label, first variant, its configuration, second, its)


def pairs_to_separate(configs: list[Configuration], variants: dict[str, Variant]) -> list[Pair]:
    """Every pair of variants of one series measured on the same device; then, for a series that names a
    reference, each member against that reference measured on the same device (each pair once)."""
    chosen: list[Pair] = []
    seen: set = set()
    by_device: dict[str, dict[str, Configuration]] = {}
    for config in configs:
        by_device.setdefault(config.device, {})[config.variant] = config
    series: dict[str, list[str]] = {}
    references: dict[str, str] = {}
    for variant in variants.values():
        if variant.series:
            series.setdefault(variant.series, []).append(variant.name)
            if variant.reference:
                references[variant.series] = variant.reference
    for device, present in by_device.items():
        for name, members in series.items():
            measured = [m for m in members if m in present]
            candidates = [(f"{name} on {device}", first, second)
                          for i, first in enumerate(measured) for second in measured[i + 1:]]
            reference = references.get(name, "")
            if reference in present:
                candidates += [(f"{name} on {device} (vs reference {reference})", reference, member)
                               for member in measured if member != reference]
            for label, first, second in candidates:
                if (device, frozenset((first, second))) not in seen:
                    seen.add((device, frozenset((first, second))))
                    chosen.append((label, first, present[first], second, present[second]))
    return chosen


def p_values_of(pairs: list[Pair]) -> PValues:
    """The permutation p-values of these pairs, to start (`with`) and read once the rest of the report is built."""
    return PValues([(a.separated_on, b.separated_on) for _, _, a, _, b in pairs])


def separated(pairs: list[Pair], p_values: Callable[[], list[float | None]], required: int | None = None,
              confidence: float = DEFAULT_CONFIDENCE, looks: int = 1) -> list[tuple[str, Separation]]:
    """Each pair separated, or not: a side with fewer than `required` passes is under-sampled, never separated; each
    at this look's confidence (one of `looks`), with its permutation p-value beside it (`p_values`: waited for once
    every pair is separated, PValues.result)."""
    found = [separate(first, a.separated_on, second, b.separated_on, required, confidence, (a.too_short, b.too_short),
                      looks) for _, first, a, second, b in pairs]
    return [(pair[0], replace(separation, p_value=p_value))
            for pair, separation, p_value in zip(pairs, found, p_values())]


def separations(configs: list[Configuration], variants: dict[str, Variant], required: int | None = None,
                confidence: float = DEFAULT_CONFIDENCE, looks: int = 1) -> list[tuple[str, Separation]]:
    """`separated` over `pairs_to_separate`, the p-values waited for."""
    pairs = pairs_to_separate(configs, variants)
    with p_values_of(pairs) as p_values:
        return separated(pairs, p_values.result, required, confidence, looks)


def _fmt(value, digits: int = 3) -> str:
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else f"{value:.{digits}f}"


def _hours(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def unit_costs(a: Assessment) -> dict:
    """The unit-cost columns of balance.csv: the planning budget per million planned inputs and per million planned
    output tokens (empty with the reason where it does not apply), per 1,000 validated inputs, and the plan's spare
    capacity."""
    spare = a.spare
    tokens = a.cost_per_million_output_tokens
    validated = a.validated_cost_per_1000_inputs
    return {
        FORECAST_PER_MILLION: str(a.cost_per_million_inputs) if a.cost_per_million_inputs is not None else "",
        FORECAST_PER_MILLION_TOKENS: str(tokens) if tokens is not None else "",
        f"{FORECAST_PER_MILLION_TOKENS}_reason": a.tokens_reason,
        "validated_cost_per_1000_inputs": (str(validated) if validated is not None
                                           else units.NO_RESULT if a.committed is not None else ""),
        "spare_deliverables": spare.spare if spare else None,
        "plan_capacity_deliverables": spare.capacity if spare else None,
        f"{FORECAST_PER_MILLION}_at_capacity": (str(a.spare_cost_per_million_inputs)
                                                if a.spare_cost_per_million_inputs is not None else ""),
    }


def balance(assessments: list[Assessment], deadline, other_costs=()) -> pd.DataFrame:
    """The final table: per configuration verdicts, raw durations, forecast terms, plan, cost, deliverables;
    then the protocol's other costs, one row each, apart from every configuration."""
    rows = []
    for a in assessments:
        c, f = a.configuration, a.forecast
        rows.append({
            "entry": "configuration",
            "device": c.device,
            "variant": c.variant,
            "distinction": c.distinction,
            **{f"{k}_attempts": v for k, v in c.counts.items()},
            "feasible": a.feasible,
            "feasibility": a.feasibility,
            "stability": a.unstable or ("stable" if a.stability is not None else ""),
            "spread_ratio": a.stability.ratio if a.stability is not None else None,
            "pass_s_raw": " ".join(_fmt(v) for v in c.durations.values),
            "pass_s_median": c.durations.median,
            "pass_s_min": c.durations.minimum,
            "pass_s_max": c.durations.maximum,
            "setup_h": f.setup_h if f else None,
            "waiting_h": f.waiting_h if f else None,
            "comparisons_h": _hours(f.comparisons_h) if f else None,
            "comparisons_sum_h": _hours(f.comparisons_sum_h) if f else None,
            "comparison_attempts": f.comparisons if f else None,
            "startup_h": _hours(f.startup_h) if f else None,
            "deliverables_audit_h": _hours(f.audit_h) if f else None,
            "expected_deliverables": f.deliverables if f else None,
            "deliverables_h": _hours(f.deliverables_h) if f else None,
            "deliverable_streams": f.streams if f else None,
            "deliverables_assumption": f.streams_note if f else "",
            "forecast_window_h": _hours(f.hours) if f else None,
            "forecast_window_low_h": _hours(f.low_hours) if f else None,
            "forecast_window_high_h": _hours(f.high_hours) if f else None,
            "forecast_note": a.forecast_note,
            "forecast_end": a.forecast_end.isoformat(timespec="minutes") if a.forecast_end else "",
            "deadline": deadline.isoformat() if deadline else "",
            "deadline_status": a.deadline_status,
            "meets_deadline": "" if a.meets_deadline is None else a.meets_deadline,
            "package": a.priced,
            "committed_cost": str(a.committed) if a.committed is not None else "",
            "currency": a.currency,
            "median_plan": a.median_plan.describe() if a.median_plan else "",
            "median_plan_cost": str(a.median_plan.total) if a.median_plan else "",
            "possible_saving": str(a.saving) if a.saving is not None else "",
            "next_plans": " | ".join(p.describe() for p in a.plans[1:3]),
            "rows_not_priced": " | ".join(a.refused),
            "accepted_deliverables": c.accepted_deliverables,
            "cost_per_validated_corpus": (str(a.cost_per_validated) if a.cost_per_validated is not None
                                          else units.NO_RESULT),
            **unit_costs(a),
        })
    for cost in other_costs:
        rows.append({"entry": "other cost", "package": f"{cost.label}: {cost.basis}",
                     "committed_cost": str(cost.amount), "currency": cost.currency})
    return pd.DataFrame(rows)
