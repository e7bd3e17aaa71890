"""An attempt's span on the device clock is the same whatever time unit pandas parsed its start in."""

from __future__ import annotations

import pandas as pd
import pytest

from gpucost_mlflow.core.names import TIMINGS
from gpucost_mlflow.report.configurations import attempt_spans

pytestmark = pytest.mark.unit

STARTS = ["2026-12-03T18:44:18.123+00:00", "2026-12-03T18:44:19.987+00:00", None]


def _rows(unit: str) -> pd.DataFrame:
    rows = pd.DataFrame({"start_time": pd.Series(pd.to_datetime(STARTS, utc=True)).astype(f"datetime64[{unit}, UTC]"),
                         "wall_s": [2.0, None, None], "host": ["h", "h", None]})
    for timing in TIMINGS:
        rows[timing] = [1.0, 0.5, float("nan")]
    return rows


@pytest.mark.parametrize("unit", ["ns", "us", "ms"])
def test_attempt_spans_start_at_the_starts_epoch_seconds_in_every_pandas_time_unit(unit):
    spans = attempt_spans(_rows(unit))
    expected = [pd.Timestamp(STARTS[0]).timestamp(), pd.Timestamp(STARTS[1]).timestamp(), 0.0]
    assert [span.start_s for span in spans.spans] == expected  # bit for bit: the report's digests and ties rest on it
    assert [span.end_s - span.start_s for span in spans.spans] == pytest.approx([2.0, 2.5, 0.0])
    assert spans.estimated == 2  # no end time: the recorded stages are a lower bound
