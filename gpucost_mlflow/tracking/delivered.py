"""A delivery fleet's deliverables in the tracking store: each found by its key (its corpus's fingerprint and the
decision it serves, core/fleet/delivery.py), so a relaunched worker skips what is delivered and ends what its lost
machine left running; and the fleet's deliverables by corpus, for its status and completeness check."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from mlflow.entities import RunTag
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.fleet import delivery
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.names import EXPECTED_IDS, OBSERVED_IDS
from gpucost_mlflow.tracking import limits, schema

DELIVERY_KEY, DELIVERY_CORPUS = schema.DELIVERY_KEY, schema.DELIVERY_CORPUS
INTERRUPTED = ("interrupted (its worker's machine was lost: SkyPilot relaunched job {job}; the corpus is delivered "
               "again)")


@dataclass(frozen=True)
class Deliverable:
    """One deliverable run of a fleet: its corpus, key, worker, MLflow state, gpucost status and inputs seen."""

    run_id: str
    corpus: str
    key: str
    worker: str
    state: str
    status: str
    observed: int | None
    expected: int | None
    reason: str = ""

    @property
    def interrupted(self) -> bool:
        """Ended by a lost machine or the worker's limit: no failure of the corpus."""
        return self.reason.startswith("interrupted")

    def attempt(self) -> delivery.Attempt:
        """The run as the fleet's status counts it."""
        if self.state == "RUNNING":
            outcome = delivery.RUNNING
        elif self.status == Status.ACCEPTED:
            outcome = delivery.ACCEPTED
        else:
            outcome = delivery.INTERRUPTED if self.interrupted else delivery.FAILED
        return delivery.Attempt(self.corpus, self.worker, outcome)


def _of(run) -> Deliverable:
    tags, metrics = run.data.tags, run.data.metrics
    observed, expected = metrics.get(OBSERVED_IDS), metrics.get(EXPECTED_IDS)
    return Deliverable(run.info.run_id, tags.get(DELIVERY_CORPUS, ""), tags.get(DELIVERY_KEY, ""),
                       tags.get(schema.FLEET_GPU, ""), run.info.status, tags.get(schema.STATUS, ""),
                       int(observed) if observed is not None else None, int(expected) if expected is not None else None,
                       tags.get(schema.STATUS_REASON, ""))


def of_fleet(client: MlflowClient, experiment_id: str, fleet_id: str) -> list[Deliverable]:
    """Every deliverable run the fleet's workers recorded, oldest first."""
    runs = client.search_runs([experiment_id], filter_string=f"tags.`{schema.FLEET_ID}` = '{fleet_id}' AND "
                              f"tags.`{DELIVERY_KEY}` != ''", order_by=["attributes.start_time ASC"],
                              max_results=10_000)
    return [_of(run) for run in runs]


def by_key(client: MlflowClient, experiment_id: str, key: str) -> list[Deliverable]:
    """Every deliverable run recorded under this key, by any fleet or worker, oldest first."""
    runs = client.search_runs([experiment_id], filter_string=f"tags.`{DELIVERY_KEY}` = '{key}'",
                              order_by=["attributes.start_time ASC"], max_results=1000)
    return [_of(run) for run in runs]


def end_left_running(client: MlflowClient, found: list[Deliverable], job_id: str) -> list[str]:
    """The deliverables a lost machine left RUNNING: ended failed (interrupted), so their corpus is delivered again
    and never counted twice; their run ids."""
    ended = []
    for one in found:
        if one.state != "RUNNING":
            continue
        client.log_batch(one.run_id, tags=[RunTag(schema.STATUS, str(Status.FAILED)), RunTag(
            schema.STATUS_REASON, INTERRUPTED.format(job=job_id or "?")[:limits.TAG_VALUE])])
        client.set_terminated(one.run_id, "KILLED", end_time=int(time.time() * 1000))
        ended.append(one.run_id)
    found[:] = [replace(one, state="KILLED", status=str(Status.FAILED), reason=INTERRUPTED) if one.run_id in ended
                else one for one in found]
    return ended
