"""MLflow's own system metrics on every pass run, sampled by the launcher outside the child's clock (a real pass's
timelines are checked in tests/test_contention.py, beside the load it flags)."""

from __future__ import annotations

import pytest

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.protocol import load_protocol


@pytest.mark.unit
@pytest.mark.parametrize("value", ["0", "-1", "fast", "true"])
def test_a_bad_sampling_interval_is_refused_in_one_line(protocol_file, tmp_path, value):
    protocol = tmp_path / "protocol.yaml"
    protocol.write_text(protocol_file.read_text() + f"system_metrics_interval_s: {value}\n", encoding="utf-8")
    with pytest.raises(GpucostError, match="system_metrics_interval_s' must be a number of seconds >= 0.1"):
        load_protocol(protocol)
