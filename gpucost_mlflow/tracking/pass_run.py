"""A pass's MLflow run: opened (nested under its campaign, adopted from `mlflow run`, or new), given its start record,
and closed as a failed attempt when the launcher stops before its attempt is recorded.

The pass flow (flow/launcher.py, flow/recording.py) decides what a run holds; every write of it happens here (the
attempt itself goes through the spool, tracking/spool.py), so the flow needs no MLflow entity or call of its own.
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

import mlflow
from mlflow.entities import Dataset, DatasetInput, InputTag, Param, Run, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from mlflow.tracking.context.registry import resolve_tags

from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.tracking import limits, schema, spool, writer


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
    """The comparison corpus as an MLflow dataset entity, kept as plain fields for the spool record."""
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
