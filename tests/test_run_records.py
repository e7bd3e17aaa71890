"""The attempts table's read: a SQL store is asked for plain rows, and they equal what `search_runs` gives."""

from __future__ import annotations

import math

import mlflow
import pandas as pd
import pytest
from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.tracking import experiments, reader, run_records, schema, search
from gpucost_mlflow.tracking.attempts_table import frame
from gpucost_mlflow.tracking.run_records import RunRecord, tagged
from tests.helpers import load_benchmark, use_store

pytestmark = pytest.mark.unit

report_scaling = load_benchmark("report_scaling")


def _comparable(record: RunRecord) -> tuple:
    """A record with NaN made comparable (NaN != NaN)."""
    metrics = {k: "nan" if isinstance(v, float) and math.isnan(v) else v for k, v in record.metrics.items()}
    return (record.run_id, record.status, record.start_time, record.end_time, record.artifact_uri,
            record.tags, record.params, metrics)


def _through_search_runs(client: MlflowClient, experiment_id: str) -> list[RunRecord]:
    runs = search.all_runs(client, experiment_id, f"tags.`{schema.VARIANT}` LIKE '%'")
    return [RunRecord.of(run) for run in runs]


@pytest.fixture(scope="module")
def varied_store(tmp_path_factory, migrated_store) -> tuple[MlflowClient, str]:
    """The benchmark's store in small (campaign parents, accepted, rejected and failed passes on two devices), plus
    what a long-lived store also holds: a pass still running, a deleted pass, a NaN metric, a metric logged twice,
    two passes started in the same millisecond, an empty variant tag, and a pass in another experiment. Written once
    for the module: its tests only read it."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        store = use_store(tmp_path_factory.mktemp("varied"), monkeypatch, migrated_store)
        try:
            return _varied(store)
        finally:  # use_store set MLflow's own tracking URI, which would outlive the environment restored here
            mlflow.set_tracking_uri(None)


def _varied(store: str) -> tuple[MlflowClient, str]:
    protocol = load_protocol(report_scaling.PROTOCOL)
    experiment_id, _ = report_scaling.populate(store, 60, protocol, report_scaling.shaped_variants())
    client = MlflowClient(tracking_uri=store)
    tagged_variant = {schema.VARIANT: "batch8"}
    running = client.create_run(experiment_id, start_time=report_scaling.START_MS + 5, tags=tagged_variant)
    deleted = client.create_run(experiment_id, start_time=report_scaling.START_MS + 6, tags=tagged_variant)
    client.delete_run(deleted.info.run_id)
    for _ in range(2):
        twin = client.create_run(experiment_id, start_time=report_scaling.START_MS + 7, tags=tagged_variant)
        client.log_batch(twin.info.run_id, metrics=[Metric("pass_s", float("nan"), 0, 0), Metric("load_s", 1.0, 0, 0),
                                                    Metric("load_s", 2.0, 1, 1)])
        client.set_terminated(twin.info.run_id, "FINISHED", end_time=report_scaling.START_MS + 9)
    empty = client.create_run(experiment_id, start_time=report_scaling.START_MS + 8)
    client.log_batch(empty.info.run_id, tags=[RunTag(schema.VARIANT, "")])
    elsewhere = client.create_experiment("elsewhere")
    client.create_run(elsewhere, tags=tagged_variant)
    assert running.info.status == "RUNNING"
    return client, experiment_id


def test_sql_store_records_equal_search_runs_records_in_the_same_order(varied_store):
    client, experiment_id = varied_store
    assert run_records._sql_store(client) is not None
    direct = tagged(client, experiment_id, schema.VARIANT)
    assert [_comparable(r) for r in direct] == [_comparable(r) for r in _through_search_runs(client, experiment_id)]
    assert len(direct) == 60 + 4  # the running, the two twins and the empty tag; not the deleted, not elsewhere


def test_attempts_table_is_the_same_read_either_way(varied_store, monkeypatch):
    client, _ = varied_store
    experiment = experiments.named(client, report_scaling.EXPERIMENT)
    direct = reader.attempts(client, experiment)
    monkeypatch.setattr(run_records, "_sql_store", lambda client: None)
    paged = reader.attempts(client, experiment)
    pd.testing.assert_frame_equal(frame(direct), frame(paged))
    assert [a.identity for a in direct] == [a.identity for a in paged]



def test_the_runs_with_one_tag_value_are_the_same_read_either_way(varied_store, monkeypatch):
    """The campaign runs the report's evidence reads (tracking/evidence.py): by the value of their role tag."""
    client, experiment_id = varied_store
    direct = tagged(client, experiment_id, schema.ROLE, schema.CAMPAIGN_ROLE)
    assert direct and all(record.tags[schema.ROLE] == schema.CAMPAIGN_ROLE for record in direct)
    monkeypatch.setattr(run_records, "_sql_store", lambda client: None)
    paged = tagged(client, experiment_id, schema.ROLE, schema.CAMPAIGN_ROLE)
    assert [_comparable(r) for r in direct] == [_comparable(r) for r in paged]


def test_sqlite_folds_a_runs_tags_and_params_into_one_object_read_as_the_rows_are(tmp_path, monkeypatch,
                                                                                  migrated_store):
    """SQLite hands each run's tags and params as one JSON object (`json_group_object`): the same texts in the same
    order as read one row at a time; quotes, backslashes, line breaks, non-ASCII and JSON-looking texts included."""
    try:
        client = MlflowClient(tracking_uri=use_store(tmp_path, monkeypatch, migrated_store))
        experiment_id = client.create_experiment("folded")
        odd = {"quote": 'say "hi"', "slash": "a\\b", "lines": "one\ntwo\tthree", "accents": "déjà vu ✓",
               "json": '{"a": [1, null]}', "number": "1e3"}
        for k in range(3):
            run = client.create_run(experiment_id, start_time=k)
            client.log_batch(run.info.run_id, params=[Param(f"p.{key}", text) for key, text in odd.items()],
                             tags=[RunTag(schema.VARIANT, f"v{k}"), *(RunTag(f"t.{key}", t) for key, t in odd.items())])
        folded = tagged(client, experiment_id, schema.VARIANT)
        monkeypatch.setattr(run_records, "_by_run", run_records._group)
        rows = tagged(client, experiment_id, schema.VARIANT)
    finally:
        mlflow.set_tracking_uri(None)
    assert [(list(r.tags.items()), list(r.params.items())) for r in folded] == \
        [(list(r.tags.items()), list(r.params.items())) for r in rows]
    assert folded[2].params["p.accents"] == "déjà vu ✓" and folded[2].tags["t.json"] == '{"a": [1, null]}'
