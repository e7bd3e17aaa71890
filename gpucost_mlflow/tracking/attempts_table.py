"""The attempts table, a view of the attempts as read (tracking/recorded.py): the columns of attempts.csv and
`gpucost attempts`, an attempt's row and back, their rendering and the protocol's warnings.

No MLflow here: tracking/reader.py reads the runs into attempts; the report reads their attributes, and this table
only for attempts.csv and its medians.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from operator import attrgetter
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

import pandas as pd

from gpucost_mlflow.core.inputs.identity import Identity
from gpucost_mlflow.core.inputs.protocol import digest_of
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.measurement import energy
from gpucost_mlflow.core.names import (
    COMPLETED_ENTRIES,
    CONVERT_S,
    COOLDOWN_S,
    CPU_UTILISATION,
    DISTINCT_SHAPES,
    ENERGY_NET_J,
    EVAL_S,
    EXPECTED_IDS,
    EXPORT_S,
    FIRST_LAP_S,
    GPU_UTILISATION,
    IDLE_POWER_W,
    LOAD_S,
    MACRO_F1,
    MEASURED_TOTAL_S,
    MFU_PADDED,
    MFU_USEFUL,
    OBSERVED_IDS,
    OTHER_CPU_S,
    OTHER_CPU_SHARE,
    OTHER_GPU_PROCESSES,
    PASS_S,
    REPETITIONS,
    REPETITIONS_IDENTICAL,
    SHAPE_SETUP_S,
    STEADY_LAP_S,
    TOKENS_GENERATED,
    TOKENS_INPUT,
    TOKENS_PROMPT,
    WARMUP_S,
)
from gpucost_mlflow.tracking import schema
from gpucost_mlflow.tracking.recorded import TABLE_SETTINGS, Attempt, Facts, Place, RecordedVerdict, RunTimes

COLUMNS = [
    "run_id", "campaign_id", "stage", "settle_plan", "pass_index", "round", "position", "attempt", "variant", "role",
    "corpus_fingerprint", "device", "backend",
    "batch_size", "precision", "quantization", "length_grouping", "workload", "engine", "lanes", "model_revision",
    *schema.STACK_IDENTITY, "seed", "endpoint",
    "status", "reason", "status_before_exclusion", "stopped",
    LOAD_S, WARMUP_S, PASS_S, REPETITIONS, FIRST_LAP_S, STEADY_LAP_S, SHAPE_SETUP_S, DISTINCT_SHAPES, MEASURED_TOTAL_S,
    REPETITIONS_IDENTICAL, COOLDOWN_S, EVAL_S,
    EXPORT_S, CONVERT_S, TOKENS_INPUT, TOKENS_PROMPT, TOKENS_GENERATED, "quality_verdict",
    *(column for output in registry.output_names() for column in registry.output(output).COLUMNS),
    EXPECTED_IDS, OBSERVED_IDS, "ids_match", "against_reference", "corpus_accepted", COMPLETED_ENTRIES,
    "mem_peak_allocated_bytes", "mem_peak_reserved_bytes", "mem_peak_rss_bytes",
    "memory_counter", *schema.UTILISATION, "mfu_reason", energy.ENERGY_METRIC, "energy_reason", IDLE_POWER_W,
    ENERGY_NET_J, "protocol_digest", "start_time", "end_time", "wall_s",
    "host", *schema.MEASURED_SPAN, "overlapped_with", OTHER_CPU_S, OTHER_CPU_SHARE, OTHER_GPU_PROCESSES, "contended",
    CPU_UTILISATION, GPU_UTILISATION, "starved", "throttled", "cold_shapes", "notes",
]
SHOWN = ["variant", "status", "batch_size", PASS_S, REPETITIONS, MFU_USEFUL, MFU_PADDED, "quality_verdict", MACRO_F1,
         EXPECTED_IDS, OBSERVED_IDS, "ids_match", "against_reference", "corpus_accepted", COMPLETED_ENTRIES, "reason",
         "overlapped_with"]
COUNTS = (EXPECTED_IDS, OBSERVED_IDS, COMPLETED_ENTRIES)  # whole numbers that may be missing: nullable integers


def _setting(key: str) -> Callable[[Attempt], str | None]:
    return lambda a: _shown(a.recorded_settings.get(key))


# The columns an attempt's record gives, in its row's order, each read from the attempt; its metrics give the others.
_RECORDED: dict[str, Callable[[Attempt], Any]] = {
    "run_id": attrgetter("run_id"), **{key: attrgetter(f"place.{key}") for key in (
        "campaign_id", "pass_index", "round", "position", "attempt")},
    "variant": attrgetter("identity.variant"), "role": attrgetter("place.role"),
    "corpus_fingerprint": attrgetter("identity.corpus_fingerprint"), "device": attrgetter("identity.device"),
    "backend": attrgetter("place.backend"), **{key: _setting(key) for key in TABLE_SETTINGS},
    **{key: attrgetter(f"identity.{key}") for key in ("workload", "engine")}, "lanes": lambda a: int(a.identity.lanes),
    "model_revision": attrgetter("identity.model_revision"), "host": attrgetter("place.host"),
    **{key: attrgetter(f"identity.{key}") for key in (*schema.STACK_IDENTITY, "seed", "endpoint")},
    **{key: attrgetter(key) for key in ("status", "reason", "status_before_exclusion")},
    "quality_verdict": attrgetter("verdict.quality_verdict"),
    **{key: attrgetter(f"facts.{key}") for key in ("contended", "throttled", "starved", "cold_shapes")},
    **{key: attrgetter(f"verdict.{key}") for key in ("ids_match", "against_reference")},
    **{key: attrgetter(f"place.{key}") for key in ("stage", "settle_plan")},
    **{key: attrgetter(key) for key in ("stopped", "corpus_accepted")},
    **{key: attrgetter(f"facts.{key}") for key in ("protocol_digest", "memory_counter")},
    "start_time": attrgetter("timings.start"), "end_time": attrgetter("timings.end"),
    "wall_s": attrgetter("timings.wall_s"),
}
_EXPLAINED = ("energy_reason", "mfu_reason", "notes", "overlapped_with")  # after its metrics: a metric never hides one


def row_of(attempt: Attempt) -> dict[str, Any]:
    """An attempt's row of the table, every column it has (a missing measurement is absent, the notes say why)."""
    row = {key: read(attempt) for key, read in _RECORDED.items()}
    row.update({key: value for key, value in attempt.metrics.items() if key in _METRIC_COLUMNS})
    row.update({key: getattr(attempt, key) for key in _EXPLAINED})
    return row


def _shown(value: Any) -> str | None:
    """A setting as the table shows it: the text its param holds, empty when not recorded."""
    return None if value is None else str(value)


_COLUMN_NAMES = frozenset(COLUMNS)
_METRIC_COLUMNS = _COLUMN_NAMES - set(_RECORDED) - set(_EXPLAINED)  # the columns a metric fills


def attempt_of_row(identity: Identity | None, row: Mapping[str, Any]) -> Attempt:
    """An attempt made from a table row (the inverse of `row_of`: attempts made by hand in tests and replays); a
    column the row lacks reads empty, and without an identity it is the one its columns name."""
    def text(key: str) -> str:
        value = row.get(key)
        return "" if _absent(value) else str(value)

    metrics = {key: float(value) for key, value in row.items() if key in _COLUMN_NAMES and key not in _RECORD_KEYS
               and isinstance(value, numbers.Real) and not isinstance(value, bool) and not _absent(value)}
    start, end = (_ms(row.get(key)) for key in ("start_time", "end_time"))
    wall = row.get("wall_s")
    if end is None and start is not None and not _absent(wall):  # a row that gives its wall time only
        end = start + round(1000 * wall)
    return Attempt(
        run_id=text("run_id"), identity=identity or Identity(*(text(f.name) for f in fields(Identity))),
        place=Place(*(text(f.name) for f in fields(Place))),
        recorded_settings=MappingProxyType(schema.settings_record({f"{schema.SETTING_PREFIX}{key}": _param(row[key])
                                                                   for key in TABLE_SETTINGS if text(key)})),
        timings=RunTimes(start, end),
        verdict=RecordedVerdict(text("quality_verdict"), (), text("ids_match") == "True",
                                text("against_reference") == "True"),
        facts=Facts(*(text(f.name) for f in fields(Facts))), metrics=MappingProxyType(metrics),
        **{name: text(name) for name in ("status", "reason", "status_before_exclusion", "energy_reason", "mfu_reason",
                                         "overlapped_with", "stopped", "notes")})


def _param(value: Any) -> str:
    """A table cell as the param it shows (a whole number pandas read as a float: as the whole number)."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _absent(value: Any) -> bool:
    return value is None or (not isinstance(value, str) and bool(pd.isna(value)))


_RECORD_KEYS = frozenset((*_RECORDED, *_EXPLAINED))  # the columns that are not metrics


def _ms(value: Any) -> int | None:
    return None if _absent(value) else int(pd.Timestamp(value).value // 1_000_000)


class AttemptsTable(pd.DataFrame):
    """The attempts table, holding the attempts it shows (`attempts`): a reader of the table reads their attributes.
    What pandas derives from it (a slice, a copy) is a plain DataFrame."""

    _metadata: ClassVar[list[str]] = ["attempts"]  # pandas keeps these attributes beside the frame


def frame(attempts: Sequence[Attempt]) -> AttemptsTable:
    """The attempts table: one row per attempt in the order given (row i is attempt i), every column of COLUMNS; built
    a column at a time (the same cells as each attempt's `row_of`), the runs' times converted once per column."""
    attempts = tuple(attempts)
    metrics = [a.metrics for a in attempts]
    times = [a.timings for a in attempts]
    columns = {key: [read(a) for a in attempts] for key, read in _RECORDED.items() if key not in _TIMES}
    held = _METRIC_COLUMNS & set().union(*metrics)
    columns.update({key: [m.get(key, math.nan) for m in metrics] if key in held else [math.nan] * len(metrics)
                    for key in _METRIC_COLUMNS})
    columns.update({key: [getattr(a, key) for a in attempts] for key in _EXPLAINED})
    columns.update(start_time=_times([t.start_ms for t in times], times, "start"),
                   end_time=_times([t.end_ms or None for t in times], times, "end"), wall_s=[t.wall_s for t in times])
    table = AttemptsTable(columns, columns=COLUMNS)
    for column in COUNTS:
        table[column] = table[column].astype("Int64")
    table.attempts = attempts
    return table


_TIMES = ("start_time", "end_time", "wall_s")


def _times(ms: list[int | None], times: list[RunTimes], name: str) -> Any:
    """A column of the runs' times (UTC) converted at once; with none recorded, each run's own empty value (the type
    pandas gives such a column)."""
    if all(value is None for value in ms):
        return [getattr(t, name) for t in times]
    column = pd.to_datetime(pd.array(ms, dtype="Int64"), unit="ms", utc=True)
    sample = next(getattr(t, name) for t, value in zip(times, ms) if value is not None)
    return column.as_unit(pd.Series([sample]).dtype.unit)  # the unit pandas gives such times: ns before pandas 3


def protocol_warnings(table: pd.DataFrame, experiment_tags: Mapping[str, str], protocol_path: Path) -> list[str]:
    """Say so when the protocol changed after results exist: conclusions then need a new evaluation."""
    locked = experiment_tags.get(schema.PROTOCOL_DIGEST, "")
    warnings = []
    if not locked:
        if len(table):
            warnings.append("this experiment has no locked protocol: its passes were not pre-registered")
        return warnings
    if protocol_path.exists():
        current = digest_of(protocol_path.read_bytes())
        if current != locked and len(table):
            warnings.append(
                f"protocol changed after results: {protocol_path} is now {current[:12]}, the experiment's passes ran "
                f"under {locked[:12]}; conclusions need a new independent evaluation (a new experiment)"
            )
    others = sorted({d for d in table["protocol_digest"] if d and d != locked})
    if others:
        warnings.append(f"{len(others)} protocol digest(s) other than the locked one among the passes: "
                        f"{', '.join(d[:12] for d in others)}")
    return warnings


def render(table: pd.DataFrame, fmt: str, warnings: list[str]) -> str:
    """The table as text: terminal table, CSV (pandas-readable), Markdown or JSON."""
    if fmt == "csv":
        return table.to_csv(index=False)
    if fmt == "json":
        records = json.loads(table.to_json(orient="records", date_format="iso"))
        return json.dumps({"warnings": warnings, "attempts": records}, indent=2) + "\n"
    if fmt == "markdown":
        lines = [f"> **Warning:** {w}" for w in warnings] + ([""] if warnings else [])
        shown = table[SHOWN + ["run_id", "notes"]]
        lines.append("| " + " | ".join(shown.columns) + " |")
        lines.append("|" + " --- |" * len(shown.columns))
        for record in shown.itertuples(index=False):
            cells = ["" if pd.isna(v) else (f"{v:.3f}" if isinstance(v, float) else str(v)) for v in record]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        return "\n".join(lines) + "\n"
    if not len(table):
        return "(no attempts)\n"
    shown = table[SHOWN].copy()
    shown["reason"] = shown["reason"].map(lambda text: text if len(text) <= 70 else text[:67] + "...")
    text = shown.to_string(index=False, na_rep="", float_format=lambda v: f"{v:.3f}")
    return f"{len(table)} attempt(s):\n" + text + "\n"
