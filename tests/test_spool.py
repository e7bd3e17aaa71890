"""The spool: a finished pass the store did not take waits on disk; `gpucost sync` publishes it once, then drops it."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.tracking import schema, spool, store

pytestmark = pytest.mark.unit

RECORD = {
    "target": "http://example.invalid", "experiment_id": "0", "experiment_name": "lost", "run_id": "",
    "run_name": "batch8", "parent_run_id": "", "start_time": 1_700_000_000_000, "end_time": 1_700_000_060_000,
    "end_status": "FINISHED", "params": {f"{schema.SETTING_PREFIX}batch_size": "8"},
    "tags": {schema.VARIANT: "batch8", schema.STATUS: "accepted", schema.ROLE: "benchmark"},
    "metrics": [["pass_s", 12.5, 1_700_000_050_000, 0]], "dataset": None,
}


@pytest.fixture
def spooled(store, tmp_path, monkeypatch):
    monkeypatch.setenv(spool.ENV, str(tmp_path / "spool"))
    (tmp_path / "verdict.json").write_text("{}")
    return lambda: spool.write(dict(RECORD, spool_id="lost-pass-1"), [tmp_path / "verdict.json"])


def test_sync_publishes_a_spooled_pass_once_with_its_timestamps_and_empties_the_spool(spooled):
    for _ in range(2):  # the second time: a sync that uploaded, then died before removing the entry
        spooled()
        synced = CliRunner().invoke(main, ["sync"])
        assert synced.exit_code == 0, synced.output
    client = MlflowClient()
    runs = client.search_runs([client.get_experiment_by_name("lost").experiment_id])
    assert len(runs) == 1 and runs[0].info.start_time == RECORD["start_time"]
    assert runs[0].data.params[schema.SPOOL_ID] == "lost-pass-1" and runs[0].data.metrics["pass_s"] == 12.5
    assert spool.entries() == []


def test_a_store_refusing_the_upload_stops_sync_in_one_line_and_keeps_the_entry(spooled, monkeypatch):
    entry = spooled()

    def refuse(client, entry, **_):
        raise MlflowException("Connection refused")

    monkeypatch.setattr(spool, "publish", refuse)
    synced = CliRunner().invoke(main, ["sync"])
    assert synced.exit_code == 2 and len(synced.output.strip().splitlines()) == 1
    assert f"sync stopped at {entry.name} (0 of 1 uploaded" in synced.output
    assert [waiting.name for waiting in spool.entries()] == [entry.name]


def test_a_sync_that_died_right_after_creating_the_run_makes_no_second_one(spooled, monkeypatch):
    entry = spooled()
    client = MlflowClient()
    real = MlflowClient.log_batch

    def lost(self, *args, **kwargs):
        raise MlflowException("Connection refused")

    monkeypatch.setattr(MlflowClient, "log_batch", lost)
    with pytest.raises(MlflowException):
        spool.publish(client, entry)  # the run exists now, nothing else of the pass
    monkeypatch.setattr(MlflowClient, "log_batch", real)
    assert CliRunner().invoke(main, ["sync"]).exit_code == 0
    runs = client.search_runs([client.get_experiment_by_name("lost").experiment_id])
    assert len(runs) == 1 and runs[0].data.params[schema.SPOOL_ID] == "lost-pass-1"


@pytest.mark.parametrize("exc, expected", [
    (MlflowException("RESOURCE_DOES_NOT_EXIST"), True),
    (ConnectionResetError("reset by peer"), True),
    (TimeoutError("timed out"), True),
    (BrokenPipeError("stdout closed by `| head`"), False),
    (ValueError("a bug of ours"), False),
])
def test_what_counts_as_a_tracking_store_error(exc, expected):
    assert store.is_store_error(exc) is expected


def test_a_campaigns_spooled_passes_are_found_by_its_id_as_a_param_or_an_older_entrys_tag(tmp_path):
    """The campaign's stop message and its resume name what waits in the spool (a campaign id read only from the
    tags once missed every entry, the id being a param)."""
    now = dict(RECORD, params={**RECORD["params"], schema.CAMPAIGN_ID: "c1"}, spool_id="a")
    before = dict(RECORD, tags={**RECORD["tags"], schema.CAMPAIGN_ID: "c1"}, spool_id="b")
    other = dict(RECORD, params={schema.CAMPAIGN_ID: "c2"}, spool_id="c")
    for record in (now, before, other):
        spool.write(record, [], root=tmp_path)
    assert sorted(entry.record["spool_id"] for entry in spool.of_campaign("c1", root=tmp_path)) == ["a", "b"]


def test_a_relaunched_fleet_job_publishes_what_its_lost_machine_spooled_and_interrupts_only_the_rest(spooled,
                                                                                                      monkeypatch):
    """The machine was lost between a pass's spool write and its publish (its disk survived, as the stand-in's does):
    that pass was measured to its end, so it is published and counts; only the pass left RUNNING is interrupted."""
    from gpucost_mlflow.fleet import job

    client = MlflowClient()
    experiment_id = client.create_experiment("fleet")
    fleet = {schema.FLEET_ID: "f1", schema.FLEET_GPU: "A10G"}
    client.create_run(experiment_id, tags={**fleet, schema.ROLE: schema.CAMPAIGN_ROLE, schema.CAMPAIGN_ID: "c1"})
    runs = {}
    for name in ("spooled", "cut"):
        runs[name] = client.create_run(experiment_id, run_name=name, tags={**fleet, schema.VARIANT: "batch8",
                                                                          schema.STATUS: "running"}).info.run_id
        client.log_param(runs[name], schema.CAMPAIGN_ID, "c1")
    spool.write(dict(RECORD, experiment_name="fleet", run_id=runs["spooled"], spool_id="s1",
                     params={**RECORD["params"], schema.CAMPAIGN_ID: "c1"}), [])
    spool.write(dict(RECORD, experiment_name="fleet", spool_id="other", params={schema.CAMPAIGN_ID: "c2"}), [])
    resumed = []
    monkeypatch.setattr(job, "run_campaign", lambda plan, display: resumed.append(plan.resume) or job.CampaignResult(
        plan.resume, ""))

    done = job.run_job("f1", "A10G", job.CampaignPlan([], 5, "fleet", *[None] * 4, None))
    assert done.published == [runs["spooled"]] and done.interrupted == [runs["cut"]] and resumed == ["c1"]
    published, cut = client.get_run(runs["spooled"]), client.get_run(runs["cut"])
    assert published.info.status == "FINISHED" and published.data.tags[schema.STATUS] == "accepted"
    assert cut.info.status == "KILLED" and cut.data.tags[schema.STATUS] == "failed"
    assert [entry.record["spool_id"] for entry in spool.entries()] == ["other"]
