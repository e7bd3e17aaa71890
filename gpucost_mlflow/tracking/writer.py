"""Writing an attempt: the tags a pass starts with, and the one log_batch that records how it ended.

The launcher and anything else that records attempts (tests, imports) go through these functions,
so the reader always finds the same schema.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass

from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.judging import verdicts
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.names import COMPLETED_ENTRIES, PASS_S, STEADY_LAP_S, TOKENS_REAL, shown, split_step
from gpucost_mlflow.tracking import descriptions, heartbeat, limits, schema


@dataclass(frozen=True)
class Basis:
    """What a pass runs on and against: its device names and backend, its corpus fingerprint and protocol digest."""

    device: str
    backend: str
    corpus_fingerprint: str
    protocol_digest: str


def start_tags(*, role: str, variant: str, basis: Basis, campaign_id: str = "", pass_index: str = "",
               extra: dict | None = None, main_metric: str = "") -> dict[str, str]:
    """The tags a pass run gets when it opens (status `running`, launcher host:pid, first heartbeat and its
    interval)."""
    tags = {
        schema.ROLE: role,
        schema.VARIANT: variant,
        schema.STATUS: str(Status.RUNNING),
        schema.LAUNCHER: f"{socket.gethostname()}:{os.getpid()}",
        schema.HOST: socket.gethostname(),
        schema.DEVICE_NAME: basis.device,
        schema.BACKEND: basis.backend,
        schema.CORPUS_FINGERPRINT: basis.corpus_fingerprint,
        schema.PROTOCOL_DIGEST: basis.protocol_digest,
        **heartbeat.start_tags(),
    }
    if campaign_id:
        tags[schema.CAMPAIGN_ID] = campaign_id
    if pass_index:
        tags[schema.PASS_INDEX] = pass_index
    if main_metric:
        tags[schema.MAIN_METRIC] = main_metric
    tags.update({key: str(value) for key, value in (extra or {}).items()})
    return tags


def throughput(metrics: dict) -> tuple[dict[str, float], dict[str, str]]:
    """Inputs and real tokens per second at the steady lap, the one duration the decision reads and every surface
    shows (a pass with one lap, or recorded before steady laps: over pass_s), and the reason for either that cannot be
    had."""
    pass_s = metrics.get(STEADY_LAP_S) or metrics.get(PASS_S)
    if not pass_s or pass_s <= 0:
        return {}, {}
    rates, missing = {}, {}
    if metrics.get(COMPLETED_ENTRIES) is not None:
        rates[schema.INPUTS_PER_S] = metrics[COMPLETED_ENTRIES] / pass_s
    if metrics.get(TOKENS_REAL) is not None:
        rates[schema.TOKENS_PER_S] = metrics[TOKENS_REAL] / pass_s
    else:
        missing[schema.TOKENS_PER_S] = "real token count not recorded (FLOPs not counted for this model)"
    return rates, missing


def outcome_batch(*, status: str, reason: str, metrics: dict, quality_verdict: str, memory_counter: str = "",
                  checks: list | None = None, timestamp_ms: int | None = None, missing: dict | None = None
                  ) -> tuple[list[Metric], list[RunTag]]:
    """The metrics and tags that record how an attempt ended, stamped when the clock stopped.

    Added to the given metrics: `accepted` (1/0) and the throughputs; to the tags, the checks in one line (their
    reasons are in verdict.json) and each missing measurement's short reason (`gpucost.missing.<metric>`, a fact the
    record logs as a param: schema.split_facts)."""
    now = timestamp_ms if timestamp_ms is not None else int(time.time() * 1000)
    rates, rates_missing = throughput(metrics)
    metrics = {**rates, **metrics, schema.ACCEPTED: 1.0 if status == Status.ACCEPTED else 0.0}
    tags = [
        RunTag(schema.STATUS, str(status)),
        RunTag(schema.STATUS_REASON, reason[:limits.TAG_VALUE]),
        RunTag(schema.MEMORY_COUNTER, memory_counter),
        RunTag(schema.QUALITY_VERDICT, quality_verdict),
    ] + ([RunTag(schema.CHECKS, verdicts.summary(checks)[:limits.TAG_VALUE])] if checks else []) + [
        RunTag(key, value) for key, value in descriptions.missing_tags({**rates_missing, **(missing or {})}).items()]
    return [metric(k, float(v), now) for k, v in metrics.items()], tags


def metric(key: str, value: float, now: int) -> Metric:
    """A metric, or one step of a metric's history when its key says which (`lap_s@3`: core/names.stepped), with
    the digits the measurement supports (core/names.shown)."""
    name, step = split_step(key)
    return Metric(name, shown(key, value), now, step)


def restated(tags: dict, metrics: dict) -> tuple[list[Metric], list[RunTag]]:
    """After a recorded pass's verdict changed (re-judged, excluded, restored): its `accepted` metric and its
    description, from its tags and metrics as they now are."""
    accepted = Metric(schema.ACCEPTED, 1.0 if tags.get(schema.STATUS) == Status.ACCEPTED else 0.0,
                      int(time.time() * 1000), 0)
    return [accepted], [RunTag(schema.NOTE, descriptions.pass_note(tags, {**metrics, schema.ACCEPTED: accepted.value}))]


def log_outcome(client: MlflowClient, run_id: str, params: dict | None = None, tags: dict | None = None,
                **outcome) -> None:
    """One log_batch with every metric, the status tags and the facts as params (see outcome_batch), and any other
    params and tags given as they are (a tag given wins over a status tag of the same key)."""
    metrics, status_tags = outcome_batch(**outcome)
    kept, facts = schema.split_facts({tag.key: tag.value for tag in status_tags})
    client.log_batch(run_id, metrics=metrics, params=[Param(k, v) for k, v in {**(params or {}), **facts}.items()],
                     tags=[RunTag(k, v) for k, v in {**kept, **(tags or {})}.items()])
