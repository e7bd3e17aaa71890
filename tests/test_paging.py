"""A team store holds more than 1,000 passes: re-judging and the overlap finder still see the last of them (every
search through the one pager, tracking/search.py)."""

from __future__ import annotations

import contextlib
import sqlite3
import uuid

import mlflow
import pytest
from click.testing import CliRunner
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.tracking import overlaps, schema
from tests.helpers import SHIPPED_PROTOCOL
from tests.scenario import B200, EXPERIMENT
from tests.test_report_protocol import pending_then_reference

pytestmark = pytest.mark.integration

MORE_THAN_A_PAGE = 1_001  # MLflow's largest default page is 1,000 runs


def fillers(count: int, tags: dict, metrics: dict | None = None, start_ms: int = 1_764_600_000_000) -> None:
    """Runs that match a search but are not the one it must find, written in one transaction into the SQLite store's
    own tables (MLflow's create_run takes one commit each: over a minute for a thousand on 2 cores). Every search of
    the test then reads them through MLflow's API like any run."""
    client = MlflowClient()
    experiment = client.get_experiment_by_name(EXPERIMENT)
    path = mlflow.get_tracking_uri().removeprefix("sqlite:///")
    ids = [uuid.uuid4().hex for _ in range(count)]
    with contextlib.closing(sqlite3.connect(path)) as connection, connection:
        connection.executemany(
            "INSERT INTO runs (run_uuid, name, source_type, source_name, entry_point_name, user_id, status, start_time,"
            " end_time, source_version, lifecycle_stage, artifact_uri, experiment_id) VALUES"
            " (?, ?, 'LOCAL', '', '', 'filler', 'FINISHED', ?, ?, '', 'active', ?, ?)",
            [(run_id, f"filler-{index}", start_ms + index, start_ms + index,
              f"{experiment.artifact_location}/{run_id}/artifacts", int(experiment.experiment_id))
             for index, run_id in enumerate(ids)])
        connection.executemany("INSERT INTO tags (key, value, run_uuid) VALUES (?, ?, ?)",
                               [(key, value, run_id) for run_id in ids for key, value in tags.items()])
        for table in ("metrics", "latest_metrics"):
            connection.executemany(
                f"INSERT INTO {table} (key, value, timestamp, step, is_nan, run_uuid) VALUES (?, ?, 0, 0, 0, ?)",
                [(key, value, run_id) for run_id in ids for key, value in (metrics or {}).items()])


def test_rejudge_judges_a_pending_pass_behind_more_than_1000_others(experiment, tmp_path):
    (waiting,), _ = pending_then_reference(experiment, tmp_path / "artifacts")  # the newest pending pass
    fillers(MORE_THAN_A_PAGE, {schema.VARIANT: "batch8-bf16", schema.STATUS: "pending",
                               schema.CORPUS_FINGERPRINT: "f" * 64},  # pending, no reference on their corpus
            start_ms=1_700_000_000_000)  # older: the oldest-first search lists them before it
    result = CliRunner().invoke(main, ["rejudge", "--experiment", EXPERIMENT, "--protocol", str(SHIPPED_PROTOCOL)])
    assert result.exit_code == 0, result.output
    assert f"batch8-bf16 run {waiting}: pending -> accepted" in result.output
    assert MlflowClient().get_run(waiting).data.tags[schema.STATUS] == "accepted"


def test_the_overlap_finder_sees_a_pass_behind_more_than_1000_candidates(experiment):
    oldest = experiment("batch8", B200, 30.0, span=(1000.0, 1030.0), host="rented-1")  # listed last by the store
    fillers(MORE_THAN_A_PAGE, {schema.VARIANT: "batch8", schema.HOST: "rented-1"},
            {schema.MEASURED_SPAN[0]: 2000.0, schema.MEASURED_SPAN[1]: 2001.0})  # candidates, never overlapping
    newest = experiment("batch8", B200, 30.0, span=(1010.0, 1040.0), host="rented-1")
    assert overlaps.mark(MlflowClient(), newest) == [oldest]
