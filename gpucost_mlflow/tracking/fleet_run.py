"""A fleet in the tracking store: its own run (GPU types, budget, each job's id and the offer SkyPilot chose), and
what a job finds again of its campaign when SkyPilot relaunches it after a preemption.

No credential is written here: the tracking URI is never recorded (the runs live in it), and every value comes from
the fleet's options and SkyPilot's answers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from decimal import Decimal

from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.tracking import heartbeat, limits, schema
from gpucost_mlflow.tracking.campaign_run import pass_runs

INTERRUPTED_BY_RECOVERY = ("interrupted (its machine was lost: SkyPilot relaunched job {job} and the campaign resumed; "
                           "the pass's rental time counts as comparison time)")


def tag(gpu: str, fact: str) -> str:
    """The fleet run's tag of one GPU type's fact: gpucost.fleet.<GPU>.<fact>."""
    return f"{schema.FLEET_PREFIX}{gpu}.{fact}"


def open_fleet(client: MlflowClient, experiment_id: str, fleet_id: str, gpus: list[str], params: dict[str, str],
               note: str) -> str:
    """The fleet's run, finished at once (its jobs run on their own machines); its id."""
    run = client.create_run(experiment_id, run_name=f"fleet {fleet_id} ({', '.join(gpus)})")
    client.log_batch(run.info.run_id,
                     params=[Param(key, str(value)[:limits.PARAM_VALUE]) for key, value in params.items()],
                     tags=[RunTag(schema.ROLE, schema.FLEET_ROLE), RunTag(schema.FLEET_ID, fleet_id),
                           RunTag(schema.NOTE, note)])
    client.set_terminated(run.info.run_id, "FINISHED")
    return run.info.run_id


def record(client: MlflowClient, run_id: str, gpu: str, facts: dict[str, str]) -> None:
    """One GPU type's facts on the fleet run (its job id, its worst case, the offer SkyPilot chose)."""
    client.log_batch(run_id, tags=[RunTag(tag(gpu, key), str(value)[:limits.TAG_VALUE])
                                   for key, value in facts.items()])


def realized_metric(gpu: str, currency: str) -> str:
    """The fleet run's metric of one GPU type's realized rental: realized_a10g_usd."""
    return schema.in_currency(f"{schema.REALIZED}_{gpu.lower()}", currency)


def record_realized(client: MlflowClient, run_id: str, gpu: str, cost: Decimal, currency: str, line: str) -> None:
    """One GPU type's final realized rental on the fleet run: its metric and the tags that say how it was billed."""
    client.log_batch(run_id, metrics=[Metric(realized_metric(gpu, currency), float(cost), int(time.time() * 1000), 0)],
                     tags=[RunTag(tag(gpu, schema.REALIZED), str(cost)),
                           RunTag(tag(gpu, f"{schema.REALIZED}_line"), line[:limits.TAG_VALUE])])


@dataclass(frozen=True)
class Fleet:
    """A fleet as its run holds it."""

    run_id: str
    experiment_id: str
    fleet_id: str
    gpus: list[str]
    params: dict[str, str]
    facts: dict[str, dict[str, str]]  # per GPU type


def find(client: MlflowClient, experiment_id: str, fleet_id: str) -> Fleet:
    """The fleet's run in this experiment; a one-line error when there is none."""
    runs = client.search_runs([experiment_id], filter_string=(f"tags.`{schema.FLEET_ID}` = '{fleet_id}' AND "
                                                              f"tags.`{schema.ROLE}` = '{schema.FLEET_ROLE}'"),
                              max_results=1)
    if not runs:
        raise GpucostError(f"no fleet '{fleet_id}' in this experiment (`gpucost fleet launch` prints its id)")
    run = runs[0]
    gpus = run.data.params.get("gpus", "").split(",")
    facts = {gpu: {key[len(tag(gpu, '')):]: value
                   for key, value in run.data.tags.items() if key.startswith(tag(gpu, ''))}
             for gpu in gpus}
    return Fleet(run.info.run_id, experiment_id, fleet_id, gpus, dict(run.data.params), facts)


def campaign_of(client: MlflowClient, experiment_id: str, fleet_id: str, gpu: str):
    """The campaign run of this fleet's job for this GPU type, or None before it started."""
    runs = client.search_runs([experiment_id], filter_string=(
        f"tags.`{schema.FLEET_ID}` = '{fleet_id}' AND tags.`{schema.FLEET_GPU}` = '{gpu}' AND "
        f"tags.`{schema.ROLE}` = '{schema.CAMPAIGN_ROLE}'"), max_results=1)
    return runs[0] if runs else None


def interrupt_left_running(client: MlflowClient, experiment_id: str, campaign_id: str, job_id: str) -> list[str]:
    """The campaign's passes still RUNNING when its job starts again: their machine is gone. Each is ended KILLED, with
    an interrupted status and reason, at the latest it can have run: its last heartbeat plus one interval, or now if
    sooner (its rental time counts as comparison time, never less than it was); their run ids."""
    ended = []
    for run in pass_runs(client, experiment_id, campaign_id):
        if run.info.status != "RUNNING":
            continue
        facts = schema.run_facts(run)
        seen, _ = heartbeat.last_sign_of_life(facts, run.info.start_time)
        now_s = time.time()
        end_s = min(now_s, seen.timestamp() + heartbeat.interval_of(facts)) if seen else now_s
        end_ms = int(end_s * 1000)
        client.log_batch(run.info.run_id, tags=[
            RunTag(schema.STATUS, str(Status.FAILED)),
            RunTag(schema.STATUS_REASON, INTERRUPTED_BY_RECOVERY.format(job=job_id or "?")[:limits.TAG_VALUE])])
        client.set_terminated(run.info.run_id, "KILLED", end_time=end_ms)
        ended.append(run.info.run_id)
    return ended
