"""What one report reads of its experiment, read once before anything is decided: the report's first stage.

`read` gathers the attempts (tracking/reader.py), the campaigns they ran in with the harness overhead each recorded,
the exclusions (cause, reason, who, when), the latest bill and where the UI serves the runs, into one frozen
`Evidence`. The report (report/build.py) turns it and the protocol into the decision with no client; one write then
logs the decision run (tracking/decision_run.py).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.money.bill import Bill
from gpucost_mlflow.tracking import decision_run, delivery_held, exclusions, reader, schema, ui
from gpucost_mlflow.tracking.attempts_table import Attempt
from gpucost_mlflow.tracking.exclusion_record import Exclusion
from gpucost_mlflow.tracking.experiments import Experiment
from gpucost_mlflow.tracking.run_records import RunRecord, tagged


@dataclass(frozen=True)
class Evidence:
    """Everything a report reads of one experiment: its attempts, oldest first; each campaign id among them (first
    seen first) with its campaign run's id ('' when the run is gone) and the harness overhead per pass that run
    recorded (campaigns that recorded none left out) and the machine time it recorded in hours (`measuring_h`,
    likewise); each excluded pass's exclusion by run id; the latest bill; and the root of the UI the report's run
    links open."""

    experiment: Experiment
    attempts: tuple[Attempt, ...] = ()
    campaigns: Mapping[str, str] = field(default_factory=dict)
    overheads: Mapping[str, float] = field(default_factory=dict)
    measuring: Mapping[str, float] = field(default_factory=dict)
    exclusions: Mapping[str, Exclusion] = field(default_factory=dict)
    bill: Bill | None = None
    ui_root: str = ui.LOCAL_UI
    delivered: str = ""  # the latest delivery's forecast held against what it realized (tracking/delivery_held.py)


def read(client: MlflowClient, experiment: Experiment, now: dt.datetime | None = None) -> Evidence:
    """The experiment's evidence, each kind read once; running passes are judged at `now` (the current time unless
    told)."""
    attempts = tuple(reader.attempts(client, experiment, now))
    ids = list(dict.fromkeys(a.place.campaign_id or "" for a in attempts))
    campaigns, overheads, measuring = _campaigns(client, experiment.id, [cid for cid in ids if cid])
    excluded = {}
    if any(a.status == Status.EXCLUDED for a in attempts):
        excluded = {x.run_id: x for x in exclusions.listed(client, experiment.id)}
    return Evidence(experiment, attempts, campaigns, overheads, measuring, excluded,
                    decision_run.latest_bill(client, experiment.id), ui.root(client.tracking_uri),
                    delivery_held.latest_line(client, experiment.id))


def _campaigns(client: MlflowClient, experiment_id: str, campaign_ids: list[str]
               ) -> tuple[dict[str, str], dict[str, float], dict[str, float]]:
    """Each campaign id with its campaign run's id ('' if the run is gone; the oldest of two), in the order given,
    the harness overhead per pass each finished campaign recorded (flow/campaign.py) and the machine time in hours
    each recorded: one read for all three."""
    if not campaign_ids:
        return {}, {}, {}
    found: dict[str, RunRecord] = {}
    for record in tagged(client, experiment_id, schema.ROLE, schema.CAMPAIGN_ROLE):
        found.setdefault(record.tags.get(schema.CAMPAIGN_ID, ""), record)
    runs = {cid: found[cid].run_id if cid in found else "" for cid in campaign_ids}
    overheads = {cid: float(found[cid].metrics[schema.HARNESS_OVERHEAD]) for cid in campaign_ids
                 if cid in found and schema.HARNESS_OVERHEAD in found[cid].metrics}
    measuring = {cid: float(found[cid].metrics[schema.MEASURING_HOURS]) for cid in campaign_ids
                 if cid in found and schema.MEASURING_HOURS in found[cid].metrics}
    return runs, overheads, measuring
