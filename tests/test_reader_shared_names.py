"""Passes that share their param names read each as its own (tracking/reader.py keeps which names are settings and
facts per set of names): a fact logged as a param overrides its tag, settings keep their params' order."""

from __future__ import annotations

import pytest

from gpucost_mlflow.tracking import schema
from gpucost_mlflow.tracking.reader import attempts_of
from gpucost_mlflow.tracking.run_records import RunRecord

pytestmark = pytest.mark.unit


def record(run_id: str, host: str, batch: str, params_first: bool) -> RunRecord:
    params = {f"{schema.SETTING_PREFIX}batch_size": batch, f"{schema.SETTING_PREFIX}precision": "bf16",
              schema.HOST: host, schema.CAMPAIGN_ID: f"c-{run_id}"}
    if not params_first:
        params = dict(reversed(params.items()))
    return RunRecord(run_id, "FINISHED", 1_000, 2_000, f"file:///store/{run_id}/artifacts",
                     {schema.VARIANT: "v", schema.STATUS: "accepted", schema.HOST: "tag-host"}, params, {"pass_s": 2.0})


def test_passes_sharing_param_names_read_their_own_facts_and_settings():
    runs = [record("r1", "h1", "8", True), record("r2", "h2", "16", True), record("r3", "h3", "32", False)]
    found = attempts_of(runs)
    assert [(a.place.host, a.place.campaign_id) for a in found] == [("h1", "c-r1"), ("h2", "c-r2"), ("h3", "c-r3")]
    assert [a.batch_size for a in found] == [8, 16, 32]
    assert [list(a.recorded_settings) for a in found] == [["batch_size", "precision"]] * 2 + [["precision",
                                                                                                "batch_size"]]
    assert all(a.row["host"] == schema.facts(run.tags, run.params)[schema.HOST] for a, run in zip(found, runs))


def test_a_pass_without_facts_in_its_params_reads_its_tags():
    run = RunRecord("r1", "FINISHED", 1_000, 2_000, "file:///a", {schema.VARIANT: "v", schema.HOST: "tag-host"},
                    {f"{schema.SETTING_PREFIX}batch_size": "4"}, {})
    (attempt,) = attempts_of([run])
    assert attempt.place.host == "tag-host" and attempt.batch_size == 4
