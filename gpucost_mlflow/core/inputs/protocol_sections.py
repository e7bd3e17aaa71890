"""The protocol's own sections as frozen records (deliverables, plan, confirmation, other costs) and the one-line
checks of its optional figures, each naming the field; read by core/inputs/protocol.py's `load_protocol`. Pure.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path
from typing import NamedTuple

from gpucost_mlflow.core.amounts import CENT
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs import method_fields as method
from gpucost_mlflow.core.inputs import plan_start
from gpucost_mlflow.core.names import MIN_LAPS
from gpucost_mlflow.core.records import Keyed, Record

DEFAULT_SPREAD_RATIO = 1.5


@dataclass(frozen=True)
class OtherCost:
    """A real cost outside the rental (storage, egress, engineer time), listed apart with its justification."""

    label: str
    amount: Decimal
    currency: str
    basis: str


@dataclass(frozen=True)
class DeliverablesAudit(Keyed, Record):
    """How a deliverable without gold labels is audited: the reference variant on a sample of its inputs, whose
    labels must agree with the deliverable's at least this much."""

    sample: int
    min_label_agreement: float


@dataclass(frozen=True)
class Deliverables(Keyed, Record):
    """What the protocol expects delivered: how many, what, whether several run at once on a lot's idle GPUs, the
    audit of a deliverable without gold labels, and how many corpora one child processes (None: all)."""

    expected: int
    description: str
    side_by_side: bool = False
    audit: DeliverablesAudit | None = None
    per_child: int | None = None


@dataclass(frozen=True)
class PlanAssumptions(Keyed, Record):
    """The campaign-plan assumptions: planned start (a date, or `at_report` until the report places it), setup and
    waiting hours, planned restarts."""

    start: dt.datetime | str | None = None
    setup_hours: float = 0.0
    waiting_hours: float = 0.0
    planned_restarts: int = 0


@dataclass(frozen=True)
class Alternatives(Keyed, Record):
    """`alternatives:` the hosted endpoints' catalog of `api` rows, the endpoints it names (all of the file when
    none) and the output tokens per input for an output that generates none."""

    catalog: str
    endpoints: tuple[str, ...] = ()
    output_tokens_per_input: float | None = None


class ConfirmationRule(NamedTuple):
    """`confirmation:` the confirmation corpus ('' for confirmation.jsonl beside the comparison corpus) and the
    seconds `gpucost confirm` runs the chosen configuration on it at least."""

    file: str = ""
    min_s: float = method.DEFAULT_CONFIRMATION_S


def deliverables(f, path: Path, section: dict) -> Deliverables:
    """`deliverables:` read by the protocol's field reader `f` (its `positive`, `get` and `fraction`)."""
    expected = f.positive("deliverables.expected")
    audit = None
    if section.get("audit") is not None:
        audit = DeliverablesAudit(f.positive("deliverables.audit.sample"),
                                  f.fraction("deliverables.audit.min_label_agreement"))
    return Deliverables(expected, f.get("deliverables.description", str),
                        _side_by_side(path, section.get("side_by_side", False)), audit,
                        method.per_child(path, section.get("per_child")))


def seconds(path: Path, document: dict, name: str, absent: float | None) -> float | None:
    """An optional duration field: a finite number of seconds, above zero; `absent` when it is not given."""
    value = document.get(name)
    if value is None:
        return absent
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise GpucostError(f"{path}: field '{name}' must be a number of seconds above 0, got {value!r}")
    return float(value)


def laps(path: Path, value) -> int:
    """`min_laps`: a whole number of laps >= 2 (a first lap alone cannot tell setup from rate), 2 when absent."""
    if value is None:
        return MIN_LAPS
    if isinstance(value, bool) or not isinstance(value, int) or value < MIN_LAPS:
        raise GpucostError(f"{path}: field 'min_laps' must be a whole number of laps >= {MIN_LAPS}, got {value!r}")
    return value


def interval(path: Path, value) -> float:
    """`system_metrics_interval_s`: seconds between two samples of MLflow's system metrics, 1 when absent."""
    if value is None:
        return 1.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0.1:
        raise GpucostError(f"{path}: field 'system_metrics_interval_s' must be a number of seconds >= 0.1, got "
                           f"{value!r}")
    return float(value)


def alternatives(path: Path, value) -> Alternatives | None:
    """`alternatives:` the hosted endpoints the report prices the same deliverables through: a catalog of `api` rows
    (relative to the protocol's folder), the endpoints named (provider/model; all of the file when absent), and the
    output tokens per input for an output that generates none (labels: the label word)."""
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("catalog"), str) or not value["catalog"].strip():
        raise GpucostError(f"{path}: field 'alternatives' must be a mapping with catalog (a CSV of api rows), "
                           "optionally endpoints (provider/model names) and output_tokens_per_input")
    endpoints = value.get("endpoints") or []
    if not isinstance(endpoints, list) or not all(isinstance(e, str) and "/" in e for e in endpoints):
        raise GpucostError(f"{path}: field 'alternatives.endpoints' must list provider/model names")
    tokens = value.get("output_tokens_per_input")
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, (int, float)) or tokens <= 0
                               or not math.isfinite(tokens)):
        raise GpucostError(f"{path}: field 'alternatives.output_tokens_per_input' must be a number > 0, got {tokens!r}")
    catalog = Path(value["catalog"])
    return Alternatives(str(catalog if catalog.is_absolute() else path.parent / catalog), tuple(endpoints),
                        float(tokens) if tokens is not None else None)


def spread_ratio(path: Path, value) -> float:
    """`max_spread_ratio`: a number above 1, 1.5 when absent (the report's bound on a configuration's max/min)."""
    if value is None:
        return DEFAULT_SPREAD_RATIO
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 1:
        raise GpucostError(f"{path}: field 'max_spread_ratio' must be a number > 1 (largest max/min of a "
                           f"configuration's pass durations; {DEFAULT_SPREAD_RATIO} when absent), got {value!r}")
    return float(value)


def _side_by_side(path: Path, value) -> bool:
    """`deliverables.side_by_side`: whether several deliverables may run at once on the idle GPUs of a lot."""
    if not isinstance(value, bool):
        raise GpucostError(f"{path}: field 'deliverables.side_by_side' must be true or false")
    return value


def other_costs(path: Path, entries) -> tuple[OtherCost, ...]:
    """`other_costs:` entries (label, amount, currency, basis): recorded apart, never folded into a configuration."""
    if entries is None:
        return ()
    if not isinstance(entries, list):
        raise GpucostError(f"{path}: field 'other_costs' must be a list of entries with label, amount, currency, basis")
    result = []
    for number, entry in enumerate(entries, 1):
        where = f"{path}: field 'other_costs[{number}]"
        if not isinstance(entry, dict):
            raise GpucostError(f"{where}' must be a mapping with label, amount, currency, basis")
        unknown = sorted(set(entry) - {"label", "amount", "currency", "basis"})
        if unknown:
            raise GpucostError(f"{where}' has unknown field(s) {', '.join(map(str, unknown))}")
        for key in ("label", "currency", "basis"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise GpucostError(f"{where}.{key}' must be a non-empty text")
        amount = entry.get("amount")
        try:
            value = Decimal(str(amount)) if not isinstance(amount, bool) and amount is not None else None
        except InvalidOperation:
            value = None
        if value is None or not value.is_finite() or value < 0:
            raise GpucostError(f"{where}.amount' must be a number >= 0")
        result.append(OtherCost(entry["label"].strip(), value.quantize(CENT, rounding=ROUND_HALF_UP),
                                entry["currency"].strip().upper(), " ".join(entry["basis"].split())))
    return tuple(result)


def plan(path: Path, section: dict) -> PlanAssumptions:
    """The campaign-plan assumptions: planned start, setup and waiting hours, planned restarts (each optional)."""
    if not isinstance(section, dict):
        raise GpucostError(f"{path}: field 'plan' must be a mapping")
    hours = {}
    for key in ("setup_hours", "waiting_hours"):
        value = section.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise GpucostError(f"{path}: field 'plan.{key}' must be a number >= 0")
        hours[key] = float(value)
    restarts = section.get("planned_restarts", 0)
    if isinstance(restarts, bool) or not isinstance(restarts, int) or restarts < 0:
        raise GpucostError(f"{path}: field 'plan.planned_restarts' must be a whole number >= 0")
    return PlanAssumptions(plan_start.start(path, section.get("start")), planned_restarts=restarts, **hours)


def fingerprint(path: Path, value) -> str:
    """corpus.fingerprint: a corpus fingerprint as `gpucost corpus build` writes it (64 hex digits), or ''."""
    if value is None:
        return ""
    if not isinstance(value, str) or not re.fullmatch(r"[0-9a-f]{64}", value.strip()):
        raise GpucostError(f"{path}: corpus.fingerprint must be a corpus fingerprint (64 hex digits, the `fingerprint` "
                           f"of corpus.json), got {value!r}")
    return value.strip()
