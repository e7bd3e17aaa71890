"""`gpucost fleet status` and `down`: each job's SkyPilot state beside its campaign's progress and its realized rental
(every attempt, setup included, billed at the price of the offer SkyPilot chose: core/fleet/realized.py); cancelling
the fleet's jobs."""

from __future__ import annotations

import time
from dataclasses import dataclass
from decimal import Decimal

from gpucost_mlflow.core.campaign.schedule import remaining, rotated
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.fleet import realized
from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.money import market
from gpucost_mlflow.core.money.market import Offer
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
    worst_cost: str
    campaign_id: str = ""
    counts: dict[str, int] | None = None
    left: int | None = None
    realized: Decimal | None = None
    realized_line: str = ""
    partial: bool = False
    why_empty: str = ""
    corpora: str = ""  # a delivery worker's corpora done, running, failed (core/fleet/delivery.py Tally)
    hours: float | None = None  # every attempt's run time so far, setup included
    started: float | None = None  # the first attempt's start and, once the job has ended, its end (epoch seconds)
    ended: float | None = None

    def line(self) -> str:
        progress = self.corpora or ("campaign not started" if self.counts is None else
                    f"campaign {self.campaign_id}: {self.counts['done']} done ({self.counts['accepted']} accepted, "
                    f"{self.counts['pending']} pending, {self.counts['failed']} failed), {self.left} left")
        return (f"{self.gpu}: job {self.job_id or 'not launched'} {self.state}; {self.offer or 'no offer yet'}; "
                f"{progress}; {self.money()}; worst case {self.worst_cost} USD")

    def money(self) -> str:
        """'realized 0.06 USD: 3 attempts (2 recoveries), ...', or the empty cell and why."""
        return f"realized {self.realized_line}" if self.realized is not None else f"realized empty: {self.why_empty}"


def _offer(state: skypilot.JobState) -> Offer | None:
    """The offer SkyPilot chose (cloud, instance, region), from SkyPilot's own catalog; None when it is not there."""
    offers = [o for o in skypilot.offers([state.cloud.lower()], []) if o.region == state.region
              and o.instance and o.instance in state.resources]
    return max(offers, key=lambda o: len(o.instance)) if offers else None


def fleet_status(experiment: str, fleet_id: str) -> list[JobStatus]:
    """Every job of the fleet with its realized rental; what SkyPilot tells of the offer, and the rental once the job
    has ended, is recorded on the fleet run as it is learnt."""
    store.bound_http_retries()
    store.check()
    client = store.client()
    experiment_id = _experiment_id(client, experiment)
    fleet = fleet_run.find(client, experiment_id, fleet_id)
    spot = fleet.params.get("spot") == "true"
    ids = {gpu: facts.get("job_id", "") for gpu, facts in fleet.facts.items()}
    states = skypilot.jobs([int(i) for i in ids.values() if i])
    terms = market.load_terms(shipped.shipped(shipped.BILLING_TERMS))
    shown = []
    for gpu in fleet.gpus:
        facts = fleet.facts[gpu]
        state = states.get(int(ids[gpu])) if ids[gpu] else None
        job = JobStatus(gpu, ids[gpu], state.status if state else "unknown to SkyPilot", "", None,
                        facts.get("worst_cost", ""))
        if state is not None:
            _realize(client, fleet.run_id, job, state, spot, terms, facts)
        elif facts.get(schema.REALIZED):
            job.offer, job.realized = facts.get("offer", ""), Decimal(facts[schema.REALIZED])
            job.realized_line = f"{facts.get(schema.REALIZED + '_line', job.realized)} (recorded on the fleet run)"
        else:
            job.why_empty = ("the job was never launched" if not ids[gpu] else
                             "SkyPilot no longer lists the job and no rental was recorded while it did")
        _progress(client, experiment_id, fleet_id, job)
        shown.append(job)
    return shown


def _realize(client, run_id: str, job: JobStatus, state: skypilot.JobState, spot: bool, terms: dict,
             facts: dict[str, str]) -> None:
    """The job's offer and realized rental from SkyPilot's queue; recorded on the fleet run (the rental once final)."""
    offer = _offer(state) if state.cloud and state.region else None
    if offer is not None:
        job.offer, job.price = f"{offer.provider} {offer.instance} in {offer.region}", (
            offer.spot_price if spot else offer.price)
    elif state.cloud and state.region:
        job.offer = f"{state.cloud.lower()} in {state.region}"
    if job.offer:
        fleet_run.record(client, run_id, job.gpu, {"offer": job.offer, "price": f"{job.price or ''}",
                                                   "recoveries": str(state.recoveries)})
    attempts = realized.from_queue(job.state, state.recoveries, state.duration_s, state.last_recovered_at,
                                   state.end_at, time.time())
    if attempts is None or job.price is None:
        job.why_empty = ("SkyPilot has not started the job on a machine yet" if attempts is None and
                         job.state not in realized.ENDED else
                         "the job ended before SkyPilot started it on a machine" if attempts is None else
                         "the chosen offer is not in SkyPilot's catalog here" if job.offer else
                         "SkyPilot has not placed the job yet")
        return
    job.hours = float(attempts.used_s) / 3600
    job.started = state.start_at if state.start_at and state.start_at > 0 else None
    job.ended = state.end_at if job.state in realized.ENDED else None
    provider = offer.provider if offer is not None else state.cloud.lower()
    found = realized.realized(attempts, job.price, terms.get(provider), provider)
    job.realized, job.realized_line, job.partial = found.cost, found.line(), found.partial
    if not found.partial and facts.get(schema.REALIZED) != str(found.cost):
        fleet_run.record_realized(client, run_id, job.gpu, found.cost, found.currency, job.realized_line)


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
    return found.id
