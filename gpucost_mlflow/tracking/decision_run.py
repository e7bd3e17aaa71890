"""The decision run: the report's files and the decision's figures logged as one run tagged gpucost.role=decision.

report/build.py decides what the run says (name, description, tags, metrics, params); every write of it happens
here, in the order the UI needs: the run with its role, then its figures in one log_batch, then its files.
"""

from __future__ import annotations

from pathlib import Path

from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient

from gpucost_mlflow.tracking import schema, search


def campaign_runs(client: MlflowClient, experiment_id: str, campaign_ids: list[str]) -> dict[str, str]:
    """Each campaign id with its campaign run's id ('' if the run is gone), in the order given."""
    if not campaign_ids:
        return {}
    parents = search.all_runs(client, experiment_id, f"tags.`{schema.ROLE}` = '{schema.CAMPAIGN_ROLE}'", order_by=None)
    found = {run.data.tags.get(schema.CAMPAIGN_ID, ""): run.info.run_id for run in parents}
    return {cid: found.get(cid, "") for cid in campaign_ids}


def log_decision(client: MlflowClient, experiment_id: str, name: str, protocol_digest: str, tags: dict[str, str],
                 params: dict[str, str], metrics: dict[str, float], files: list[Path]) -> str:
    """Create the decision run, log its tags, params and metrics (one log_batch) and its files; returns its id."""
    run = client.create_run(experiment_id, run_name=name, tags={
        schema.ROLE: schema.DECISION_ROLE, schema.PROTOCOL_DIGEST: protocol_digest,
    })
    now = run.info.start_time
    client.log_batch(run.info.run_id, metrics=[Metric(k, v, now, 0) for k, v in metrics.items()],
                     params=[Param(k, v) for k, v in params.items()], tags=[RunTag(k, v) for k, v in tags.items()])
    for path in files:
        client.log_artifact(run.info.run_id, str(path))
    client.set_terminated(run.info.run_id, "FINISHED")
    return run.info.run_id
