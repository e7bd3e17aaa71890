"""An attempt as read back (`Attempt`: its configuration's identity as recorded, and its row), and the attempts
table, a view of them: the columns of attempts.csv and `gpucost attempts`, their rendering and the protocol's warnings.

No MLflow here: tracking/reader.py reads the runs into attempts, and the report reads these records.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

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


@dataclass(frozen=True)
class Attempt:
    """One attempted pass as read back: its configuration's identity as its run recorded it (never rebuilt from the
    table), and its row of the attempts table (the columns of COLUMNS it has; a missing measurement is absent and the
    notes say why). The row is read-only."""

    identity: Identity
    row: Mapping[str, Any]

    def __post_init__(self) -> None:
        if not isinstance(self.row, MappingProxyType):
            object.__setattr__(self, "row", MappingProxyType(dict(self.row)))

    @property
    def run_id(self) -> str:
        return self.row["run_id"]

    @property
    def role(self) -> str:
        return self.row.get("role", "")

    @property
    def status(self) -> str:
        return self.row.get("status", "")


def frame(attempts: Sequence[Attempt]) -> pd.DataFrame:
    """The attempts table: one row per attempt in the order given (row i is attempt i), every column of COLUMNS."""
    table = pd.DataFrame([attempt.row for attempt in attempts], columns=COLUMNS)
    for column in COUNTS:
        table[column] = table[column].astype("Int64")
    return table


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
