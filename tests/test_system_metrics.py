"""MLflow's own system metrics on every pass run, sampled by the launcher outside the child's clock."""

from __future__ import annotations

import pytest
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.protocol import load_protocol
from gpucost_mlflow.tracking import schema
from tests.helpers import only_run, run_pass


@pytest.mark.integration
def test_a_real_pass_carries_system_metrics_and_their_sampling_interval(store, corpus_dir, model_dir, protocol_file,
                                                                        tmp_path):
    protocol = tmp_path / "protocol.yaml"
    protocol.write_text(protocol_file.read_text() + "system_metrics_interval_s: 0.5\n", encoding="utf-8")
    result = run_pass(corpus_dir / "comparison.jsonl", model_dir, protocol, "batch8")
    assert result.exit_code == 0, result.output
    run = only_run()
    assert run.data.tags[schema.SYSTEM_METRICS_INTERVAL] == "0.5"
    history = MlflowClient().get_metric_history(run.info.run_id, "system/cpu_utilization_percentage")
    assert history and all(0.0 <= point.value <= 100.0 * 64 for point in history)
    assert "system/system_memory_usage_megabytes" in run.data.metrics
    assert run.data.tags[schema.STATUS] == "accepted"


@pytest.mark.unit
@pytest.mark.parametrize("value", ["0", "-1", "fast", "true"])
def test_a_bad_sampling_interval_is_refused_in_one_line(protocol_file, tmp_path, value):
    protocol = tmp_path / "protocol.yaml"
    protocol.write_text(protocol_file.read_text() + f"system_metrics_interval_s: {value}\n", encoding="utf-8")
    with pytest.raises(GpucostError, match="system_metrics_interval_s' must be a number of seconds >= 0.1"):
        load_protocol(protocol)
