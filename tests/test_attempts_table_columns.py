"""The attempts table is built a column at a time (tracking/attempts_table.py `frame`): each row is still exactly the
attempt's own row (`row_of`), cell for cell and type for type, and a report's medians are pandas' medians."""

from __future__ import annotations

import math
import random
from types import MappingProxyType

import pandas as pd
import pytest

from gpucost_mlflow.core.inputs.identity import Identity
from gpucost_mlflow.core.names import COMPLETED_ENTRIES, EXPECTED_IDS, LOAD_S, PASS_S
from gpucost_mlflow.report.measured import median_of
from gpucost_mlflow.tracking.attempts_table import COLUMNS, COUNTS, frame, row_of
from gpucost_mlflow.tracking.reader import attempts_of
from gpucost_mlflow.tracking.recorded import Attempt, Facts, Place, RunTimes
from tests.test_reader_recorded import _recorded

pytestmark = pytest.mark.unit


def _row_by_row(attempts) -> pd.DataFrame:
    """The table as it was built before: a frame of each attempt's row."""
    table = pd.DataFrame([row_of(a) for a in attempts], columns=COLUMNS)
    for column in COUNTS:
        table[column] = table[column].astype("Int64")
    return table


def _same(attempts) -> None:
    table = frame(attempts)
    expected = _row_by_row(attempts)
    pd.testing.assert_frame_equal(pd.DataFrame(table), expected, check_exact=True)
    assert list(table.dtypes) == list(expected.dtypes)
    assert table.to_csv(index=False) == expected.to_csv(index=False)
    assert table.attempts == tuple(attempts)


def test_a_recorded_stores_table_is_each_attempts_row():
    records, now = _recorded()
    _same(attempts_of(records, now))


def test_hand_made_attempts_keep_their_rows_missing_times_and_metrics_included():
    identity, at = Identity("gpu", "v", workload="classify", lanes="2", seed="0"), 1_700_000_000_000
    attempts = [
        Attempt("a", identity, Place("c1", "1", role="benchmark"), timings=RunTimes(at + 123, at + 9_999),
                metrics=MappingProxyType({PASS_S: 1.5, LOAD_S: 0.25, EXPECTED_IDS: 100.0, "not_a_column": 3.0}),
                status="accepted", notes="n"),
        Attempt("b", identity, timings=RunTimes(None, None), facts=Facts(contended="yes"), status="failed"),
        Attempt("c", identity, timings=RunTimes(at, 0), metrics=MappingProxyType({COMPLETED_ENTRIES: 7.0}),
                reason="r", overlapped_with="a"),
    ]
    _same(attempts)
    _same(attempts[1:2])
    assert frame(attempts)["lanes"].tolist() == [2, 2, 2]


def test_no_attempts_make_an_empty_table_of_every_column():
    table = frame([])
    assert list(table.columns) == COLUMNS and len(table) == 0


def test_a_median_is_the_one_pandas_gives():
    rng = random.Random(7)
    for n in range(1, 40):
        values = [rng.choice([rng.random() * 10 ** rng.randint(-4, 4), float(rng.randint(0, 5)), math.nan])
                  for _ in range(n)]
        attempts = [Attempt(str(i), Identity("gpu", "v"), metrics=MappingProxyType({} if v is None else {PASS_S: v}))
                    for i, v in enumerate(values + [None])]
        expected = pd.Series(values, dtype=float).median()
        found = median_of(attempts, PASS_S)
        assert (found is None and math.isnan(expected)) or found == expected
