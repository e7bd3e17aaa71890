"""benchmarks/report_scaling.py: its store is shaped like the launcher's and reads back one attempt per pass run."""

from __future__ import annotations

import pytest
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.inputs.protocol import load_protocol
from tests.helpers import attempts_table, load_benchmark

pytestmark = pytest.mark.unit

report_scaling = load_benchmark("report_scaling")


def test_benchmark_store_reads_back_one_attempt_per_pass_run(store):
    protocol = load_protocol(report_scaling.PROTOCOL)
    _, campaigns = report_scaling.populate(store, 30, protocol, report_scaling.shaped_variants())
    table = attempts_table(report_scaling.EXPERIMENT, MlflowClient(tracking_uri=store))
    assert len(table) == 30 and campaigns >= 1
    assert set(table["variant"]) <= set(report_scaling.SPEED)
