"""A pass's MLflow run as one handle, `PassRun`: opened (nested under its campaign, adopted from `mlflow run`, or new),
given its start record, kept alive by its heartbeat and sampled for MLflow's system metrics, its attempt recorded
(written to the spool, then published: tracking/spool.py), and closed as a failed attempt when the launcher stops
before its attempt is recorded.

The pass flow (flow/launcher.py, flow/recording.py) decides what a run holds and hands it plain records (`Ending`);
every MLflow entity and call of a pass run is made here, so the flow needs none of its own.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import mlflow
from mlflow.entities import Dataset, DatasetInput, InputTag, Metric, Param, Run, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from mlflow.tracking.context.registry import resolve_tags

from gpucost_mlflow.core.errors import one_line
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.tracking import (
    descriptions,
    heartbeat,
    limits,
    overlaps,
    schema,
    spool,
    store,
    system_metrics,
    writer,
)


@dataclass(frozen=True)
class Ending:
    """How an attempt ended, as the flow hands it over: status and reason, its metrics (a stepped one keyed
    `name@step`), the verdict's quality, memory counter, checks and missing measurements, the clock's stop, the
    flags its durations carry, the child's own tags, whether a preview table was written, and the run's end state."""

    status: str
    reason: str
    metrics: dict
    quality_verdict: str
    memory_counter: str
    checks: tuple
    stopped_ms: int
    missing: dict
    end_status: str  # FINISHED, FAILED or KILLED
    flags: dict = field(default_factory=dict)
    outcome_tags: dict = field(default_factory=dict)
    preview: bool = False


class PassRun:
    """One pass's run, from opening to its attempt recorded. As a context manager, an exception leaving it before
    `record` closes the run as a failed attempt saying why (interrupted: KILLED), never hiding that exception."""

    def __init__(self, client: MlflowClient, experiment_id: str, experiment_name: str, run_name: str,
                 parent_run_id: str = ""):
        self.client, self.experiment_id, self.experiment_name = client, experiment_id, experiment_name
        self.run_name, self.parent_run_id = run_name, parent_run_id
        self.run: Run | None = None
        self.beat: heartbeat.Heartbeat | None = None
        self.recorded = False
        self._started: tuple[dict, dict, str, dict] = ({}, {}, "", {})

    def __enter__(self) -> PassRun:  # noqa: PYI034 - typing.Self is Python 3.11's; 3.10 is supported
        self.run = open_run(self.client, self.experiment_id, self.run_name, self.parent_run_id)
        self.experiment_id = self.run.info.experiment_id  # a run `mlflow run` created is in its own experiment
        return self

    def __exit__(self, kind, exc, traceback) -> bool:
        if exc is not None and not self.recorded:
            if self.beat is not None:
                self.beat.stop()
            if isinstance(exc, KeyboardInterrupt):
                reason, state = "interrupted (launcher stopped before the attempt was recorded)", "KILLED"
            else:
                reason, state = f"error in the launcher: {one_line(exc, named=True)}", "FAILED"
            close_unrecorded(self.client, self.run_id, reason, state)
        return False

    @property
    def run_id(self) -> str:
        return self.run.info.run_id

    def beating(self) -> PassRun:
        """Start the run's own heartbeat (a delivery's runs share one: `shared_heartbeat`)."""
        self.beat = heartbeat.Heartbeat(self.client, self.run_id).start()
        return self

    def sampling(self, interval_s: float, run_id: str = "") -> system_metrics.Sampler:
        """MLflow's system metrics sampled while the child runs, on this run (or the run named: a delivery's)."""
        return system_metrics.Sampler(self.client, run_id or self.run_id, interval_s).start()

    def start(self, params: dict[str, str], tags: dict[str, str], run_name: str, files: list[Path],
              dataset: dict) -> None:
        """The start record: params, the start tags with the run's name and description, its files and dataset."""
        record_start(self.client, self.run_id, params, tags, files, dataset)
        self._started = (params, {k: v for k, v in tags.items() if k not in (schema.RUN_NAME, schema.NOTE)},
                         run_name, dataset)

    @property
    def start_tags(self) -> dict[str, str]:
        return self._started[1]

    def record(self, ending: Ending, workdir: Path) -> str:
        """The attempt written to the spool, the run's heartbeat ended, then published; returns the spool folder it
        stays in when the store is unreachable, else ""."""
        metric_entities, outcome_tags = writer.outcome_batch(
            status=ending.status, reason=ending.reason, metrics=ending.metrics, quality_verdict=ending.quality_verdict,
            memory_counter=ending.memory_counter, checks=list(ending.checks), timestamp_ms=ending.stopped_ms,
            missing=ending.missing)
        outcome_tags += [RunTag(key, value) for key, value in ending.flags.items()]
        if ending.preview:
            logged = json.dumps([{"path": schema.PREVIEW, "type": "table"}])
            outcome_tags.append(RunTag(schema.LOGGED_ARTIFACTS, logged))
        ended = {**self.start_tags, **{tag.key: tag.value for tag in outcome_tags}}
        outcome_tags.append(RunTag(schema.NOTE,
                                   descriptions.pass_note(ended, {m.key: m.value for m in metric_entities})))
        record = self._attempt_record(ending, outcome_tags, metric_entities)
        if self.beat is not None:
            self.beat.finish(self.run_id)  # the attempt is recorded now: no heartbeat may race its publication
        self.recorded = True
        return publish(self.client, record, workdir)

    def _attempt_record(self, ending: Ending, outcome_tags: list[RunTag], metric_entities: list[Metric]) -> dict:
        """The attempt as the spool keeps it: the run, its end, its params and facts, start and outcome tags, metrics
        and dataset. Without a heartbeat: publishing it removes the run's last one (a finished run has no sign of
        life to show)."""
        params, start_tags, run_name, dataset = self._started
        tags, facts = schema.split_facts({
            **{key: value for key, value in start_tags.items() if key != schema.HEARTBEAT},
            schema.RUN_NAME: run_name, **{tag.key: tag.value for tag in outcome_tags}, **ending.outcome_tags})
        return {
            "target": spool_target(),
            "experiment_id": self.run.info.experiment_id,
            "experiment_name": self.experiment_name,
            "run_id": self.run_id,
            "run_name": run_name,
            "parent_run_id": self.parent_run_id,
            "start_time": self.run.info.start_time,
            "end_time": int(time.time() * 1000),
            "end_status": ending.end_status,
            "params": {**params, **facts},
            "tags": tags,
            "metrics": [[m.key, m.value, m.timestamp, m.step] for m in metric_entities],
            "dataset": dataset,
        }


def shared_heartbeat(runs: list[PassRun]) -> heartbeat.Heartbeat:
    """One heartbeat for the runs of a delivery's child, each leaving it as its attempt is recorded."""
    beat = heartbeat.Heartbeat(runs[0].client, runs[0].run_id, more=tuple(run.run_id for run in runs[1:])).start()
    for run in runs:
        run.beat = beat
    return beat


def publish(client: MlflowClient, record: dict, workdir: Path) -> str:
    """Write the attempt to the spool, then publish it; returns the spool folder it stays in if the store is
    unreachable, else ""."""
    files = [workdir / name for name in (schema.MANIFEST, schema.ENVIRONMENT, schema.VERDICT,
                                         *registry.exported_files(), schema.PREVIEW, schema.ERROR)]
    entry = spool.write(record, files)
    try:
        spool.publish_and_remove(client, entry, opened=True)
    except Exception as exc:
        if not store.is_store_error(exc):
            raise
        print(f"gpucost: tracking store unreachable after the pass ({one_line(exc) or type(exc).__name__}); the "
              f"attempt is kept in {entry.folder}: run `gpucost sync` when the store is back", file=sys.stderr)
        return str(entry.folder)
    _flag_overlaps(client, record)
    return ""


def _flag_overlaps(client: MlflowClient, record: dict) -> None:
    """Name the passes whose measured clock overlapped this one's (best effort: the reader finds them anyway), its
    span and host read from the attempt just published."""
    metrics = {key: value for key, value, _, _ in record["metrics"]}
    try:
        others = overlaps.mark(client, record["run_id"], overlaps.span_of(
            record["run_id"], record["params"].get(schema.HOST, ""), metrics, record["experiment_id"]))
    except Exception as exc:
        if not store.is_store_error(exc):
            raise
        return
    if others:
        print(f"gpucost: this pass's measured clock overlapped {len(others)} other pass(es) on this host "
              f"({', '.join(others)}): its duration competed for the machine", file=sys.stderr)


def open_run(client: MlflowClient, experiment_id: str, run_name: str, parent_run_id: str) -> Run:
    """The pass's run: a nested run under a campaign, the run `mlflow run` created, or a new one.

    Only the client API is used, so no fluent "active run" is left to end against a store that went away.
    """
    if os.environ.get("MLFLOW_RUN_ID") and not parent_run_id:
        return client.get_run(os.environ["MLFLOW_RUN_ID"])
    tags = {schema.PARENT_RUN_ID: parent_run_id} if parent_run_id else {}
    return client.create_run(experiment_id, run_name=run_name, tags=resolve_tags(tags))


def record_start(client: MlflowClient, run_id: str, params: dict[str, str], tags: dict[str, str],
                 files: list[Path], dataset: dict) -> None:
    """What the run holds as it opens: params, the start tags and facts (params: schema.FACTS) in one log_batch,
    its files, its corpus dataset."""
    tags, facts = schema.split_facts(tags)
    given = [Param(k, v) for k, v in {**params, **facts}.items()]
    first, *more = list(limits.batches(given, "params")) or [[]]
    client.log_batch(run_id, params=first, tags=[RunTag(k, v) for k, v in tags.items()])
    for chunk in more:  # a workload with many settings: the params a single log_batch cannot take
        client.log_batch(run_id, params=chunk)
    for path in files:
        client.log_artifact(run_id, str(path))
    _log_dataset(client, run_id, dataset)


def dataset_fields(rows: list, path: str, digest: str) -> dict:
    """The comparison corpus as an MLflow dataset entity, kept as plain fields for the spool record; built once per
    process for a corpus (its path and fingerprint digest), as a campaign's passes share it."""
    key = (path, digest, len(rows))
    if key not in _DATASETS:
        _DATASETS[key] = _dataset_fields(rows, path, digest)
    return dict(_DATASETS[key])


_DATASETS: dict[tuple, dict] = {}


def _dataset_fields(rows: list, path: str, digest: str) -> dict:
    import pandas as pd

    frame = pd.DataFrame(rows, columns=["id", "text", "label", "bucket"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dataset = mlflow.data.from_pandas(frame, source=path, targets="label", name=Path(path).stem, digest=digest)
    entity = dataset._to_mlflow_entity()
    return {"name": entity.name, "digest": entity.digest, "source_type": entity.source_type,
            "source": entity.source, "schema": entity.schema, "profile": entity.profile}


def _log_dataset(client: MlflowClient, run_id: str, fields: dict) -> None:
    """Link the run to its corpus dataset, once more if a concurrent pass inserted the same row first."""
    context = InputTag(schema.DATASET_CONTEXT_TAG, schema.DATASET_CONTEXT)
    inputs = [DatasetInput(Dataset(**fields), tags=[context])]
    try:
        client.log_inputs(run_id, inputs)
    except MlflowException:
        # Passes started at once on several machines insert the same dataset row; the store keeps
        # one and refuses the others. A second try finds it and only links this run to it.
        time.sleep(0.5)
        client.log_inputs(run_id, inputs)


def spool_target() -> str:
    """The tracking store a spooled attempt is published to, without credentials (tracking/spool.py)."""
    return spool.public_uri(mlflow.get_tracking_uri())


def close_unrecorded(client: MlflowClient, run_id: str, reason: str, state: str) -> None:
    """Close a run whose attempt was never recorded as a failed attempt with the reason; never raises (the error
    that stopped the launcher is the one to see)."""
    try:
        run = client.get_run(run_id)
        ended = {**schema.run_facts(run), schema.STATUS: str(Status.FAILED), schema.STATUS_REASON: reason}
        metrics, note = writer.restated(ended, run.data.metrics)
        client.log_batch(run_id, metrics=metrics,
                         tags=[RunTag(schema.STATUS, str(Status.FAILED)), RunTag(schema.STATUS_REASON, reason), *note])
        client.set_terminated(run_id, state)
    except Exception:  # noqa: BLE001, S110 - never hide the error that stopped the launcher
        pass
