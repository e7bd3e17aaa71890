"""`gpucost fleet status` and `down`: each job's SkyPilot state beside its campaign's progress, the time it used and
its cost at the price of the offer SkyPilot chose; cancelling the fleet's jobs."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_UP, Decimal

from gpucost_mlflow.core.campaign.schedule import remaining, rotated
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.money.billing.base import CENT
from gpucost_mlflow.fleet import skypilot
from gpucost_mlflow.tracking import experiments, fleet_run, schema, store
from gpucost_mlflow.tracking.campaign_run import CampaignRun


@dataclass
class JobStatus:
    """One GPU type's job and campaign, as `fleet status` prints it; None where a figure is not known, with why."""

    gpu: str
    job_id: str
    state: str
    offer: str
    price: Decimal | None
    used_h: Decimal | None
    cost: Decimal | None
    worst_cost: str
    campaign_id: str = ""
    counts: dict[str, int] | None = None
    left: int | None = None
    why_empty: str = ""

    def line(self) -> str:
        progress = ("campaign not started" if self.counts is None else
                    f"campaign {self.campaign_id}: {self.counts['done']} done ({self.counts['accepted']} accepted, "
                    f"{self.counts['pending']} pending, {self.counts['failed']} failed), {self.left} left")
        money = (f"{self.used_h:.2f} h used, {self.cost} USD at {self.price} USD/h" if self.cost is not None
                 else f"cost empty: {self.why_empty}")
        return (f"{self.gpu}: job {self.job_id or 'not launched'} {self.state}; {self.offer or 'no offer yet'}; "
                f"{progress}; {money}; worst case {self.worst_cost} USD")


def _offer_price(state: skypilot.JobState, spot: bool) -> tuple[str, Decimal | None]:
    """The offer SkyPilot chose (cloud, instance, region) and its catalog price, from SkyPilot's own catalog."""
    if not state.cloud or not state.region:
        return "", None
    offers = [o for o in skypilot.offers([state.cloud.lower()], []) if o.region == state.region
              and o.instance and o.instance in state.resources]
    if not offers:
        return f"{state.cloud.lower()} in {state.region}", None
    offer = max(offers, key=lambda o: len(o.instance))
    return f"{offer.provider} {offer.instance} in {offer.region}", offer.spot_price if spot else offer.price


def fleet_status(experiment: str, fleet_id: str) -> list[JobStatus]:
    """Every job of the fleet; what SkyPilot tells of the offer is recorded on the fleet run as it is learnt."""
    store.bound_http_retries()
    store.check()
    client = store.client()
    experiment_id = _experiment_id(client, experiment)
    fleet = fleet_run.find(client, experiment_id, fleet_id)
    spot = fleet.params.get("spot") == "true"
    ids = {gpu: facts.get("job_id", "") for gpu, facts in fleet.facts.items()}
    states = skypilot.jobs([int(i) for i in ids.values() if i])
    shown = []
    for gpu in fleet.gpus:
        state = states.get(int(ids[gpu])) if ids[gpu] else None
        job = JobStatus(gpu, ids[gpu], state.status if state else "unknown to SkyPilot", "", None, None, None,
                        fleet.facts[gpu].get("worst_cost", ""))
        if state is not None:
            job.offer, job.price = _offer_price(state, spot)
            if job.offer:
                fleet_run.record(client, fleet.run_id, gpu, {"offer": job.offer, "price": f"{job.price or ''}",
                                                             "recoveries": str(state.recoveries)})
            if state.duration_s is not None and job.price is not None:
                job.used_h = Decimal(str(state.duration_s)) / 3600
                job.cost = (job.used_h * job.price).quantize(CENT, rounding=ROUND_UP)
        if job.cost is None:
            job.why_empty = ("SkyPilot has not placed the job yet" if not job.offer else
                             "the chosen offer is not in SkyPilot's catalog here" if job.price is None else
                             "SkyPilot reports no running time yet")
        _progress(client, experiment_id, fleet_id, job)
        shown.append(job)
    return shown


def _progress(client, experiment_id: str, fleet_id: str, job: JobStatus) -> None:
    """The campaign's passes: done, accepted, pending, failed, and the slots left to run."""
    found = fleet_run.campaign_of(client, experiment_id, fleet_id, job.gpu)
    if found is None:
        return
    run, _ = CampaignRun.find(client, experiment_id, found.data.tags[schema.CAMPAIGN_ID])
    by_slot = run.attempts_by_slot()
    latest = [rows[-1]["status"] for key, rows in by_slot.items() if key and rows]
    job.campaign_id = run.campaign_id
    job.counts = {"done": len(latest), "accepted": latest.count(Status.ACCEPTED),
                  "pending": latest.count(Status.PENDING), "failed": latest.count(Status.FAILED)}
    job.left = len(remaining(rotated(run.variants, run.passes), by_slot))


def fleet_down(experiment: str, fleet_id: str) -> list[tuple[str, str]]:
    """Cancel every launched job of the fleet; (GPU type, job id) of each."""
    store.bound_http_retries()
    store.check()
    client = store.client()
    experiment_id = _experiment_id(client, experiment)
    fleet = fleet_run.find(client, experiment_id, fleet_id)
    jobs = [(gpu, facts["job_id"]) for gpu, facts in fleet.facts.items() if facts.get("job_id")]
    if jobs:
        skypilot.cancel([int(job_id) for _, job_id in jobs])
    return jobs


def _experiment_id(client, name: str) -> str:
    found = experiments.resolve(client, name, create=False)
    if found is None:
        raise GpucostError(f"no experiment '{name}' in this tracking store")
    return found[0]
