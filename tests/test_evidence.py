"""The report's first stage: everything it reads of an experiment, read once into one frozen record."""

from __future__ import annotations

import dataclasses

import pytest
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.tracking import evidence, exclusions, experiments, schema, search
from gpucost_mlflow.tracking.attempts_table import frame
from tests.helpers import load_benchmark

pytestmark = pytest.mark.unit

report_scaling = load_benchmark("report_scaling")


def test_the_evidence_holds_the_attempts_campaigns_overheads_exclusions_and_bill(store):
    protocol = load_protocol(report_scaling.PROTOCOL)
    experiment_id, count = report_scaling.populate(store, 40, protocol, report_scaling.shaped_variants())
    client = MlflowClient(tracking_uri=store)
    parents = list(search.all_runs(client, experiment_id, f"tags.`{schema.ROLE}` = '{schema.CAMPAIGN_ROLE}'"))
    client.log_metric(parents[0].info.run_id, schema.HARNESS_OVERHEAD, 0.37)
    client.log_metric(parents[0].info.run_id, schema.MEASURING_HOURS, 0.11)
    accepted = next(run for run in search.all_runs(client, experiment_id, f"tags.`{schema.STATUS}` = 'accepted'"))
    exclusions.exclude(client, accepted.info.run_id, "operator", "another job on the machine", who="ana")

    found = evidence.read(client, experiments.named(client, report_scaling.EXPERIMENT))
    assert found.experiment.id == experiment_id and found.experiment.tags[schema.PROTOCOL_DIGEST] == protocol.digest
    assert len(found.attempts) == 40 and len(frame(found.attempts)) == 40
    ids = list(dict.fromkeys(a.row["campaign_id"] for a in found.attempts))
    by_campaign = {run.data.tags[schema.CAMPAIGN_ID]: run.info.run_id for run in parents}
    assert dict(found.campaigns) == {cid: by_campaign[cid] for cid in ids} and len(ids) == count
    assert dict(found.overheads) == {parents[0].data.tags[schema.CAMPAIGN_ID]: 0.37}
    assert dict(found.measuring) == {parents[0].data.tags[schema.CAMPAIGN_ID]: 0.11}
    (excluded,) = [a for a in found.attempts if a.status == Status.EXCLUDED]
    read = found.exclusions[excluded.run_id]
    assert (read.cause, read.by, read.reason) == ("operator: another job on the machine", "ana", "operator")
    assert found.bill is None and found.ui_root
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.attempts = ()
