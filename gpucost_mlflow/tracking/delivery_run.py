"""A delivery's MLflow run (`gpucost deliver`): the parent of one deliverable pass per corpus, holding how many
corpora it was given, how many children processed them (each loading and warming up once) and how they ended."""

from __future__ import annotations

import time

from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.tracking import schema


def open_delivery(client: MlflowClient, experiment_id: str, variant: str, corpora: int, per_child: int | None,
                  why: str = "") -> str:
    """The delivery's run, open while its children run (`why`: what fixed per_child, said in its note); its id."""
    run = client.create_run(experiment_id, run_name=f"delivery {variant} ({corpora} corpora)")
    client.log_batch(run.info.run_id,
                     params=[Param("delivery.variant", variant), Param("delivery.corpora", str(corpora)),
                             Param("delivery.per_child", str(per_child or "all"))],
                     tags=[RunTag(schema.ROLE, schema.DELIVERY_ROLE),
                           RunTag(schema.NOTE, f"{corpora} corpora delivered by {variant}, "
                                               f"{per_child or 'all'} per child{why} (load and warm-up once per "
                                               "child); "
                                               "one nested run per corpus")])
    return run.info.run_id


def close_delivery(client: MlflowClient, run_id: str, statuses: list[str], children: int, state: str) -> None:
    """The delivery's counts as metrics, and its end: FINISHED, FAILED or KILLED."""
    counts = {"delivery_corpora_recorded": len(statuses), "delivery_children": children,
              "delivery_corpora_accepted": sum(status == Status.ACCEPTED for status in statuses)}
    now = int(time.time() * 1000)
    client.log_batch(run_id, metrics=[Metric(key, float(value), now, 0) for key, value in counts.items()])
    client.set_terminated(run_id, state)
