"""A team store holds more than 1,000 passes: re-judging and the overlap finder still see the last of them (every
search through the one pager, tracking/search.py)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from mlflow.entities import Metric
from mlflow.tracking import MlflowClient

from gpucost_mlflow.cli import main
from gpucost_mlflow.tracking import overlaps, schema
from tests.helpers import SHIPPED_PROTOCOL
from tests.scenario import B200, EXPERIMENT
from tests.test_report_protocol import pending_then_reference

pytestmark = pytest.mark.integration

MORE_THAN_A_PAGE = 1_001  # MLflow's largest default page is 1,000 runs


def fillers(count: int, tags: dict, metrics: dict | None = None, start_ms: int = 1_764_600_000_000) -> None:
    """Runs that match a search but are not the one it must find: one write each (two with metrics)."""
    client = MlflowClient()
    experiment_id = client.get_experiment_by_name(EXPERIMENT).experiment_id
    for index in range(count):
        run = client.create_run(experiment_id, tags=tags, start_time=start_ms + index)
        if metrics:
            client.log_batch(run.info.run_id, metrics=[Metric(k, v, 0, 0) for k, v in metrics.items()])


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
