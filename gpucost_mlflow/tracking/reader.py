"""Reading attempts back from the tracking store: every attempted pass, failed ones included, as an `Attempt`
(tracking/attempts_table.py) carrying its configuration's identity as its run recorded it, and its row."""

from __future__ import annotations

import datetime as dt
import os
import socket

import pandas as pd
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.inputs.acceptance import DEFAULT_OUTPUT
from gpucost_mlflow.core.inputs.identity import Identity
from gpucost_mlflow.core.judging import verdicts
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.kinds import engines, registry
from gpucost_mlflow.core.measurement import energy
from gpucost_mlflow.core.measurement.overlap import Interval, overlaps
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
from gpucost_mlflow.tracking import exclusions, heartbeat, schema
from gpucost_mlflow.tracking.attempts_table import COLUMNS, Attempt
from gpucost_mlflow.tracking.experiments import Experiment
from gpucost_mlflow.tracking.run_records import RunRecord, tagged


class _gc_paused:
    """Pause Python's cyclic garbage collector while the runs are read, then restore its state.

    Read through search_runs (tracking/run_records.py), a run becomes one object per tag, param and metric (~70 per
    pass); with the collector on, its repeated collections over those young objects cost about twice the read itself
    (benchmarks/report_scaling.py). The rows and their values are unchanged.
    """

    def __enter__(self):
        import gc

        self.enabled = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc):
        import gc

        if self.enabled:
            gc.enable()
        return False


def launcher_alive(tag: str) -> bool:
    """Whether the launcher recorded as host:pid is still running (only knowable on its own host)."""
    host, _, pid = tag.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recorded_identity(tags: dict, params: dict) -> Identity:
    """The configuration a run measured, as it recorded it (PROTOCOL.md §2; `tags`: its tags with its facts,
    schema.facts). A field recorded before it existed reads as what every such pass ran: the built-in classifier on
    torch, one lane; any other absent field is '' (not recorded)."""
    return Identity(
        device=tags.get(schema.DEVICE_NAME, ""),
        variant=tags.get(schema.VARIANT, ""),
        workload=params.get(f"{schema.SETTING_PREFIX}workload", registry.DEFAULT),
        lanes=str(int(params.get(f"{schema.SETTING_PREFIX}lanes", 1))),
        model_revision=params.get(schema.MODEL_REVISION, ""),
        corpus_fingerprint=tags.get(schema.CORPUS_FINGERPRINT, ""),
        engine=params.get(f"{schema.SETTING_PREFIX}engine", engines.DEFAULT),
        seed=params.get(schema.SEED_TORCH, ""),
        endpoint=tags.get(schema.ENDPOINT, ""),
        **{key: params.get(f"{schema.STACK_PREFIX}{key}", "") for key in schema.STACK_IDENTITY},
    )


def attempt_row(run: RunRecord, now: dt.datetime | None = None) -> dict:
    """One attempts-table row; a measurement that is absent stays empty and the notes say why.

    A run left RUNNING is interrupted when its launcher is gone (on this host) or its heartbeat stopped (any host),
    judged at `now` (the current time unless told)."""
    return _read(run, now, {})[1]


def _read(run: RunRecord, now: dt.datetime | None, exported: dict[str, str]) -> tuple[Identity, dict]:
    """The run's identity as recorded and its attempts-table row, whose identity columns are that identity's.
    `exported`: the file each workload exported before `gpucost.exported` was recorded, filled as workloads are met."""
    tags, metrics, params = schema.facts(run.tags, run.params), run.metrics, run.params
    identity = recorded_identity(tags, params)
    status, reason, excluded = status_of(run, now, tags)
    before = exclusions.details(tags) if excluded else {}
    measured_reason = before.get("reason_before", "") if excluded else reason
    row = {
        "run_id": run.run_id,
        "campaign_id": tags.get(schema.CAMPAIGN_ID, ""),
        "pass_index": tags.get(schema.PASS_INDEX, ""),
        "round": tags.get(schema.ROUND, ""),
        "position": tags.get(schema.POSITION, ""),
        "attempt": tags.get(schema.ATTEMPT, ""),
        "variant": identity.variant,
        "role": tags.get(schema.ROLE, ""),
        "corpus_fingerprint": identity.corpus_fingerprint,
        "device": identity.device,
        "backend": tags.get(schema.BACKEND, ""),
        "batch_size": params.get(f"{schema.SETTING_PREFIX}batch_size"),
        "precision": params.get(f"{schema.SETTING_PREFIX}precision"),
        "quantization": params.get(f"{schema.SETTING_PREFIX}quantization"),
        "length_grouping": params.get(f"{schema.SETTING_PREFIX}length_grouping"),
        "workload": identity.workload,
        "engine": identity.engine,
        "lanes": int(identity.lanes),
        "model_revision": identity.model_revision,
        "host": tags.get(schema.HOST, ""),
        **{key: getattr(identity, key) for key in schema.STACK_IDENTITY},
        "seed": identity.seed,
        "endpoint": identity.endpoint,
        "status": status,
        "reason": reason,
        "status_before_exclusion": before.get("status_before", ""),
        "quality_verdict": tags.get(schema.QUALITY_VERDICT, ""),
        "contended": tags.get(schema.CONTENDED, ""),
        "throttled": tags.get(schema.THROTTLED, ""),
        "starved": tags.get(schema.STARVED, ""),
        "cold_shapes": tags.get(schema.COLD_SHAPES, ""),
        "ids_match": ids_matched(tags),
        "against_reference": compared_with_reference(tags),
        "stage": tags.get(schema.STAGE, ""),
        "settle_plan": tags.get(schema.SETTLE_PLAN, ""),
        "stopped": tags.get(schema.RACE_STOPPED, ""),
        # The status says it; passes recorded before carried the tag too.
        "corpus_accepted": status == Status.ACCEPTED and tags.get(schema.CORPUS_ACCEPTED, "true") == "true",
        "protocol_digest": tags.get(schema.PROTOCOL_DIGEST, ""),
        "memory_counter": tags.get(schema.MEMORY_COUNTER, ""),
        "start_time": pd.Timestamp(run.start_time, unit="ms", tz="UTC"),
        "end_time": pd.Timestamp(run.end_time, unit="ms", tz="UTC") if run.end_time else None,
        # The run's measured wall time (start, load, warm-up, pass, evaluation, export): what it held the rental.
        "wall_s": (run.end_time - run.start_time) / 1000 if run.end_time and run.start_time else None,
    }
    row.update({key: value for key, value in metrics.items() if key in _COLUMN_NAMES and key not in row})
    row["energy_reason"] = energy_reason(tags, metrics, status, measured_reason or reason)
    row["mfu_reason"] = mfu_reason(metrics, status, measured_reason or reason, row["workload"])
    exported_file = tags.get(schema.EXPORTED, "")
    if not exported_file and status != Status.RUNNING:
        if identity.workload not in exported:
            exported[identity.workload] = _exported_before_the_tag(identity.workload)
        exported_file = exported[identity.workload]
    row["notes"] = "; ".join(notes_of(run, row, excluded, measured_reason, tags, before, exported_file))
    return identity, row


_COLUMN_NAMES = frozenset(COLUMNS)


def compared_with_reference(tags: dict) -> bool:
    """Whether the pass's checks compared it with the reference pass: from its checks line (from its per-check tags on
    passes before it)."""
    if schema.CHECKS in tags:
        return verdicts.judged_against_reference(tags[schema.CHECKS])
    return any(key.startswith(schema.CHECK_PREFIX + verdicts.REFERENCE_CHECK_PREFIX) for key in tags)


def ids_matched(tags: dict) -> bool:
    """Whether the pass's ids check passed: read from its checks line (from its own tag on passes before it)."""
    if schema.CHECKS in tags:
        return verdicts.outcomes(tags[schema.CHECKS]).get("ids", False)
    return tags.get(schema.IDS_MATCH, "") == "true"


def status_of(run: RunRecord, now: dt.datetime | None, tags: dict | None = None) -> tuple[str, str, bool]:
    """The status and reason of a run as read, and whether it is excluded: a RUNNING run whose launcher is gone or
    whose heartbeat stopped, or a run that ended before its attempt was recorded, is failed with why. `tags`: the
    run's tags with its facts (schema.facts), read from the run unless given."""
    tags = schema.facts(run.tags, run.params) if tags is None else tags
    status = tags.get(schema.STATUS, "")
    reason = tags.get(schema.STATUS_REASON, "")
    stale = heartbeat.stale_reason(tags, run.start_time, now) if run.status == "RUNNING" else ""
    if run.status == "RUNNING" and not launcher_alive(tags.get(schema.LAUNCHER, "")):
        status, reason = str(Status.FAILED), "interrupted (launcher gone, run left RUNNING)"
    elif stale:
        status, reason = str(Status.FAILED), stale
    elif run.status in ("FAILED", "KILLED") and status in ("", Status.RUNNING):
        status, reason = str(Status.FAILED), reason or "interrupted (run ended before the attempt was recorded)"
    # An excluded pass keeps its row; the cause, who and when are its reason (`gpucost exclude`, PROTOCOL.md §6).
    excluded = tags.get(schema.STATUS) == Status.EXCLUDED and bool(exclusions.details(tags)["cause"])
    if excluded:
        status, reason = str(Status.EXCLUDED), exclusions.describe(tags)
    return status, reason, excluded


def notes_of(run: RunRecord, row: dict, excluded: bool, measured_reason: str, tags: dict, before: dict,
             exported: str) -> list[str]:
    """The notes of an attempts-table row: its status and reason, what it was before an exclusion (`before`:
    exclusions.details), every empty measurement with why, where its output file (`exported`) is, and why its MFU is
    empty."""
    metrics, status, reason = run.metrics, row["status"], row["reason"]
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
    if row["wall_s"] is None:
        notes.append("wall_s empty: the run has no end time (still running, or its launcher died)")
    if status != Status.RUNNING:
        notes.append(f"predictions: {run.artifact_uri}/{exported}")
    if row["mfu_reason"]:
        notes.append(f"mfu empty: {row['mfu_reason']}")
    short = too_short(metrics.get(MEASURED_TOTAL_S, metrics.get(PASS_S)))
    if short:
        notes.append(f"measured part {short}")
    if metrics.get(REPETITIONS, 1) > 1:
        notes.append(f"pass_s is one corpus: the clock processed it {metrics[REPETITIONS]:.0f} times in "
                     f"{metrics.get(MEASURED_TOTAL_S, float('nan')):.3f} s (min_laps, min_measured_s)")
    if PASS_S in metrics and STEADY_LAP_S not in metrics and row.get("role", "benchmark") == "benchmark":
        notes.append(SETUP_IN_RATE)
    if metrics.get(REPETITIONS_IDENTICAL) == 0:
        notes.append("repetitions differ: a later repetition's outputs are not identical to the first's "
                     "(the first's were exported and judged)")
    for flag in ("throttled", "starved", "cold_shapes"):
        if row.get(flag):
            notes.append(f"{flag}: {row[flag]}" if flag != "starved" else row[flag])
    return notes


def energy_reason(tags: dict, metrics: dict, status: str, reason: str) -> str:
    """Why a pass has no energy_j ('' when it has one; its flag when the value is coarse): an empty cell says why."""
    if energy.ENERGY_METRIC in metrics:
        return tags.get(energy.ENERGY_FLAG_TAG, "")
    if PASS_S not in metrics:
        return f"no completed pass ({reason or status or 'not recorded'})"
    return tags.get(f"{schema.MISSING_PREFIX}{energy.ENERGY_METRIC}", "") or "no energy counter recorded for the pass"


def _exported_before_the_tag(workload: str) -> str:
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


def flag_overlaps(rows: list[dict]) -> None:
    """Fill `overlapped_with` (and a note) for passes whose measured clocks overlapped on the same host."""
    start, end = schema.MEASURED_SPAN
    spans = [Interval(r["run_id"], r.get("host") or "", r[start], r[end]) for r in rows
             if r.get(start) is not None and r.get(end) is not None]
    found = overlaps(spans)
    for row in rows:
        others = found.get(row["run_id"], [])
        row["overlapped_with"] = ",".join(others)
        if others:
            row["notes"] = "; ".join(filter(None, [f"overlapped (same host {row['host']}): {', '.join(others)}",
                                                   row["notes"]]))


def carry_stops(rows: list[dict]) -> None:
    """Carry a race's stop, recorded on the last pass of the configuration it stopped, to every row of that
    configuration (its variant on its device) in that campaign: the attempts table's `stopped` column."""
    found = {(row["campaign_id"], row["variant"], row["device"]): row["stopped"] for row in rows if row.get("stopped")}
    for row in rows:
        row["stopped"] = found.get((row["campaign_id"], row["variant"], row["device"]), "")


def attempts(client: MlflowClient, experiment: Experiment, now: dt.datetime | None = None) -> list[Attempt]:
    """Every gpucost pass of the experiment as an attempt, oldest first; running passes are judged at `now` (the
    current time unless told)."""
    with _gc_paused():
        return attempts_of(tagged(client, experiment.id, schema.VARIANT), now)


def attempts_of(records: list[RunRecord], now: dt.datetime | None = None) -> list[Attempt]:
    """The attempts of these runs in their order, each with its identity as recorded; passes whose measured clocks
    overlapped on one host say so (`overlapped_with`)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    exported: dict[str, str] = {}
    read = [_read(run, now, exported) for run in records]
    flag_overlaps([row for _, row in read])
    carry_stops([row for _, row in read])
    return [Attempt(identity, row) for identity, row in read]
