"""Why an attempt's cells are empty, in its notes: every missing measurement says why, never a silent 0 (its status
and reason, an exclusion's earlier status, where its output file is, why its energy or MFU figures are absent)."""

from __future__ import annotations

from typing import NamedTuple

from gpucost_mlflow.core.inputs.acceptance import DEFAULT_OUTPUT
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.measurement import energy
from gpucost_mlflow.core.measurement.repetitions import SETUP_IN_RATE
from gpucost_mlflow.core.measurement.stats import too_short
from gpucost_mlflow.core.names import (
    COMPLETED_ENTRIES,
    MEASURED_TOTAL_S,
    MFU_USEFUL,
    PASS_S,
    REPETITIONS,
    REPETITIONS_IDENTICAL,
    STEADY_LAP_S,
    USEFUL_FLOP_PER_S,
)
from gpucost_mlflow.tracking import schema
from gpucost_mlflow.tracking.recorded import Facts
from gpucost_mlflow.tracking.run_records import RunRecord


class Noted(NamedTuple):
    """What an attempt's notes read of it besides its run: its status and reason, wall time, why its MFU is empty,
    its role and its facts."""

    status: str
    reason: str
    wall_s: float | None
    mfu_reason: str
    role: str
    facts: Facts


def notes_of(run: RunRecord, attempt: Noted, excluded: bool, measured_reason: str, before: dict,
             exported: str) -> list[str]:
    """The notes of an attempt's row: its status and reason, what it was before an exclusion (`before`:
    exclusions.details), every empty measurement with why, where its output file (`exported`) is, and why its MFU is
    empty."""
    metrics, status, reason = run.metrics, attempt.status, attempt.reason
    notes = []
    if status not in (Status.ACCEPTED, ""):
        notes.append(f"{status}: {reason}")
    if excluded:
        notes.append(f"before exclusion: {before.get('status_before', '') or 'not recorded'}"
                     f" ({measured_reason or 'no reason recorded'})")
    why = measured_reason or reason or "not recorded"
    for key in schema.TIMINGS + (COMPLETED_ENTRIES,):
        if key not in metrics:
            notes.append(f"{key} empty: {why}")
    if attempt.wall_s is None:
        notes.append("wall_s empty: the run has no end time (still running, or its launcher died)")
    if status != Status.RUNNING:
        notes.append(f"predictions: {run.artifact_uri}/{exported}")
    if attempt.mfu_reason:
        notes.append(f"mfu empty: {attempt.mfu_reason}")
    short = too_short(metrics.get(MEASURED_TOTAL_S, metrics.get(PASS_S)))
    if short:
        notes.append(f"measured part {short}")
    if metrics.get(REPETITIONS, 1) > 1:
        notes.append(f"pass_s is one corpus: the clock processed it {metrics[REPETITIONS]:.0f} times in "
                     f"{metrics.get(MEASURED_TOTAL_S, float('nan')):.3f} s (min_laps, min_measured_s)")
    if PASS_S in metrics and STEADY_LAP_S not in metrics and attempt.role == "benchmark":
        notes.append(SETUP_IN_RATE)
    if metrics.get(REPETITIONS_IDENTICAL) == 0:
        notes.append("repetitions differ: a later repetition's outputs are not identical to the first's "
                     "(the first's were exported and judged)")
    facts = attempt.facts
    notes += [f"throttled: {facts.throttled}"] if facts.throttled else []
    notes += [facts.starved] if facts.starved else []
    notes += [f"cold_shapes: {facts.cold_shapes}"] if facts.cold_shapes else []
    return notes


def energy_reason(tags: dict, metrics: dict, status: str, reason: str) -> str:
    """Why a pass has no energy_j ('' when it has one; its flag when the value is coarse): an empty cell says why."""
    if energy.ENERGY_METRIC in metrics:
        return tags.get(energy.ENERGY_FLAG_TAG, "")
    if PASS_S not in metrics:
        return f"no completed pass ({reason or status or 'not recorded'})"
    return tags.get(f"{schema.MISSING_PREFIX}{energy.ENERGY_METRIC}", "") or "no energy counter recorded for the pass"


def exported_before_the_tag(workload: str) -> str:
    """A pass recorded before `gpucost.exported` existed: what its workload wrote (user code: labels then)."""
    try:
        delivered = registry.of_workload(workload).output
    except KeyError:
        delivered = ""
    return registry.output(delivered or DEFAULT_OUTPUT).FILE


def mfu_reason(metrics: dict, status: str, reason: str, workload: str = registry.DEFAULT) -> str:
    """Why a pass has no MFU figures ('' when it has them): an empty cell always says why."""
    if MFU_USEFUL in metrics:
        return ""
    if PASS_S not in metrics:
        return f"no completed pass ({reason or status or 'not recorded'})"
    if USEFUL_FLOP_PER_S not in metrics and workload.startswith("python:"):
        return "FLOPs unknown for user code (its module declares no flops(), or its count failed: verdict.json says)"
    if USEFUL_FLOP_PER_S not in metrics:
        return "FLOPs not counted (model config not BERT-style, or the pass predates FLOP counting)"
    return "no dense-matmul peak cached for this device and precision when the pass ran (run `gpucost doctor --peak`)"
