"""Writing an attempt: the tags a pass starts with, and the one log_batch that records how it ended.

The launcher and anything else that records attempts (tests, imports) go through these functions,
so the reader always finds the same schema.
"""

from __future__ import annotations

import os
import socket
import time

from mlflow.entities import Metric, RunTag
from mlflow.tracking import MlflowClient

from gpucost_mlflow.tracking import schema

MAX_TAG = 5000


def start_tags(*, role: str, variant: str, device: str, backend: str, corpus_fingerprint: str, protocol_digest: str,
               campaign_id: str = "", pass_index: str = "", extra: dict | None = None) -> dict[str, str]:
    """The tags a pass run gets when it opens (status `running`, launcher host:pid)."""
    tags = {
        schema.ROLE: role,
        schema.VARIANT: variant,
        schema.STATUS: "running",
        schema.LAUNCHER: f"{socket.gethostname()}:{os.getpid()}",
        schema.HOST: socket.gethostname(),
        schema.DEVICE_NAME: device,
        schema.BACKEND: backend,
        schema.CORPUS_FINGERPRINT: corpus_fingerprint,
        schema.PROTOCOL_DIGEST: protocol_digest,
    }
    if campaign_id:
        tags[schema.CAMPAIGN_ID] = campaign_id
    if pass_index:
        tags[schema.PASS_INDEX] = pass_index
    tags.update({key: str(value) for key, value in (extra or {}).items()})
    return tags


def outcome_batch(*, status: str, reason: str, metrics: dict, ids_match: bool, quality_verdict: str,
                  memory_counter: str = "", checks: list | None = None, timestamp_ms: int | None = None
                  ) -> tuple[list[Metric], list[RunTag]]:
    """The metrics and status tags that record how an attempt ended, stamped when the clock stopped."""
    now = timestamp_ms if timestamp_ms is not None else int(time.time() * 1000)
    tags = [
        RunTag(schema.STATUS, status),
        RunTag(schema.STATUS_REASON, reason[:MAX_TAG]),
        RunTag(schema.CORPUS_ACCEPTED, str(status == "accepted").lower()),
        RunTag(schema.IDS_MATCH, str(ids_match).lower()),
        RunTag(schema.MEMORY_COUNTER, memory_counter),
        RunTag(schema.QUALITY_VERDICT, quality_verdict),
    ] + [
        RunTag(f"{schema.CHECK_PREFIX}{check.name}", f"{'pass' if check.passed else 'fail'}: {check.reason}"[:MAX_TAG])
        for check in checks or []
    ]
    return [Metric(k, float(v), now, 0) for k, v in metrics.items()], tags


def log_outcome(client: MlflowClient, run_id: str, **outcome) -> None:
    """One log_batch with every metric and the status tags (see outcome_batch)."""
    metrics, tags = outcome_batch(**outcome)
    client.log_batch(run_id, metrics=metrics, tags=tags)
