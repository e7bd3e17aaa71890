"""A fleet job's own side, on its machine: start the campaign of its GPU type, or resume it after SkyPilot relaunched
the job (a preempted spot machine). Passes the lost machine finished but left in its spool (its disk survived) are
published first; passes it left RUNNING are then ended interrupted, so their slots run again and their rental time
still counts; a finished campaign is not run again."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from gpucost_mlflow.core.fleet.jobs import MANAGED_JOB_ID
from gpucost_mlflow.flow.campaign import CampaignPlan, CampaignResult, Display, run_campaign
from gpucost_mlflow.tracking import experiments, fleet_run, schema, spool, store


@dataclass(frozen=True)
class JobRun:
    """What the job did: the campaign it ran or resumed (None: already finished), the passes it published from the
    spool and those it ended interrupted."""

    campaign_id: str
    result: CampaignResult | None
    interrupted: list[str]
    published: list[str] = field(default_factory=list)


def run_job(fleet_id: str, gpu: str, plan: CampaignPlan, display: Display | None = None) -> JobRun:
    """Run this GPU type's campaign of the fleet, resuming the one a lost machine left."""
    store.bound_http_retries()
    store.check()
    client = store.client()
    experiment_id = experiments.resolve(client, plan.experiment, create=True).id
    job_id = os.environ.get(MANAGED_JOB_ID, "")
    plan.tags = {**plan.tags, schema.FLEET_ID: fleet_id, schema.FLEET_GPU: gpu, schema.FLEET_JOB: job_id}
    found = fleet_run.campaign_of(client, experiment_id, fleet_id, gpu)
    interrupted: list[str] = []
    published: list[str] = []
    if found is not None:
        campaign_id = found.data.tags[schema.CAMPAIGN_ID]
        published = spool.publish_campaign(client, campaign_id)
        if found.info.status == "FINISHED":
            return JobRun(campaign_id, None, [], published)
        interrupted = fleet_run.interrupt_left_running(client, experiment_id, campaign_id, job_id)
        plan.resume = campaign_id
    result = run_campaign(plan, display)
    return JobRun(result.campaign_id, result, interrupted, published)
