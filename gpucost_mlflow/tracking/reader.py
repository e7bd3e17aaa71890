"""Reading attempts back from the tracking store: one row per attempted pass, failed ones included."""

from __future__ import annotations

import os
import socket
from typing import Iterator

import pandas as pd
from mlflow.entities import Run, ViewType
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.tracking import schema

PAGE = 1000
COLUMNS = [
    "run_id", "variant", "role", "status", "reason", "corpus", "batch_size", "precision",
    "quantization", "length_grouping", "device", "backend", "load_s", "warmup_s", "pass_s",
    "eval_s", "export_s", "expected_ids", "observed_ids", "ids_match", "completed_entries",
    "corpus_accepted", "accuracy", "macro_f1", "mem_peak_allocated_bytes",
    "mem_peak_reserved_bytes", "mem_peak_rss_bytes", "start_time", "notes",
]


def _runs(client: MlflowClient, experiment_id: str) -> Iterator[Run]:
    token = None
    while True:
        page = client.search_runs(
            [experiment_id],
            filter_string=f"tags.`{schema.VARIANT}` LIKE '%'",
            run_view_type=ViewType.ACTIVE_ONLY,
            max_results=PAGE,
            order_by=["attributes.start_time ASC"],
            page_token=token,
        )
        yield from page
        token = page.token
        if not token:
            return


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


def attempt_row(run: Run) -> dict:
    """One attempts-table row; a measurement that is absent stays empty and the notes say why."""
    tags, metrics, params = run.data.tags, run.data.metrics, run.data.params
    status = tags.get(schema.STATUS, "")
    reason = tags.get(schema.STATUS_REASON, "")
    if run.info.status == "RUNNING" and not launcher_alive(tags.get(schema.LAUNCHER, "")):
        status, reason = "failed", "interrupted (launcher gone, run left RUNNING)"
    elif run.info.status in ("FAILED", "KILLED") and status in ("", "running"):
        status, reason = "failed", reason or f"run {run.info.status.lower()} before the attempt was recorded"
    row = {
        "run_id": run.info.run_id,
        "variant": tags.get(schema.VARIANT, ""),
        "role": tags.get(schema.ROLE, ""),
        "status": status,
        "reason": reason,
        "corpus": tags.get(schema.CORPUS_FINGERPRINT, "")[:12],
        "batch_size": params.get("setting.batch_size"),
        "precision": params.get("setting.precision"),
        "quantization": params.get("setting.quantization"),
        "length_grouping": params.get("setting.length_grouping"),
        "device": tags.get(schema.DEVICE_NAME, ""),
        "backend": tags.get(schema.BACKEND, ""),
        "start_time": pd.Timestamp(run.info.start_time, unit="ms", tz="UTC"),
    }
    notes = []
    for key in COLUMNS:
        if key in row:
            continue
        if key in metrics:
            row[key] = metrics[key]
    if "expected_ids" in metrics and "observed_ids" in metrics:
        row["ids_match"] = tags.get(schema.IDS_MATCH, "") == "true"
    row["corpus_accepted"] = tags.get(schema.CORPUS_ACCEPTED, "") == "true"
    for key in schema.TIMINGS:
        if key not in metrics:
            notes.append(f"{key} empty: {reason or 'not recorded'}")
    row["notes"] = "; ".join(notes)
    return row


def attempts(experiment: str, client: MlflowClient | None = None) -> pd.DataFrame:
    """The attempts table of an experiment, oldest first, every gpucost pass run as a row."""
    client = client or MlflowClient()
    found = client.get_experiment_by_name(experiment)
    if found is None:
        raise GpucostError(f"experiment '{experiment}' not found in {client.tracking_uri}")
    rows = [attempt_row(run) for run in _runs(client, found.experiment_id)]
    table = pd.DataFrame(rows, columns=COLUMNS)
    for column in ("expected_ids", "observed_ids", "completed_entries"):
        table[column] = table[column].astype("Int64")
    return table
