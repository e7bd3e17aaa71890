"""The attempts one report reads (tracking/reader.py) beside their table: each configuration holds its attempts
(grouped by their identity as the runs recorded it, never by matching the table's columns; one built by hand is found
by its identity here) and they are read by their attributes; the table is for attempts.csv and its medians."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import pandas as pd

from gpucost_mlflow.core.inputs.identity import Identity
from gpucost_mlflow.core.money.decision import Configuration
from gpucost_mlflow.tracking.attempts_table import Attempt, attempt_of_row, frame

BENCHMARK = "benchmark"  # the role of the passes a configuration's durations are made of


def at_each_seed(identity: Identity) -> tuple[Identity, ...]:
    """The identities a configuration's passes carry: one per seed it holds (several when its seeds are pooled)."""
    return tuple(replace(identity, seed=seed) for seed in identity.held("seed"))


@dataclass(frozen=True, eq=False)
class ReportAttempts:
    """The attempts of one report, oldest first, and their table: row i of the table is attempt i (its identity may
    be a pooled one, report/seeded.py, while the table shows each pass's own seed). The table is built when first
    read: the configurations need only the attempts, so the report's p-values start before it."""

    attempts: tuple[Attempt, ...]
    shown: pd.DataFrame | None = None  # the table as given (report/seeded.py), else built of the attempts

    @classmethod
    def of(cls, attempts: Sequence[Attempt]) -> ReportAttempts:
        return cls(tuple(attempts))

    @cached_property
    def table(self) -> pd.DataFrame:
        return self.shown if self.shown is not None else frame(self.attempts)

    @cached_property
    def benchmark(self) -> dict[Identity, tuple[int, ...]]:
        """Each identity of the benchmark attempts, first seen first, with the positions of its attempts."""
        found: dict[Identity, list[int]] = {}
        for position, attempt in enumerate(self.attempts):
            if attempt.role == BENCHMARK:
                found.setdefault(attempt.identity, []).append(position)
        return {identity: tuple(positions) for identity, positions in found.items()}

    def positions(self, config: Configuration) -> list[int]:
        """Where the benchmark attempts of one configuration sit in the table (at any of its seeds), in its order;
        a configuration recorded without an identity is its device and variant."""
        if config.identity is None:
            return sorted(p for identity, positions in self.benchmark.items() for p in positions
                          if (identity.device, identity.variant) == (config.device, config.variant))
        return sorted(p for identity in at_each_seed(config.identity) for p in self.benchmark.get(identity, ()))

    def rows_of(self, config: Configuration) -> pd.DataFrame:
        """The benchmark attempts of one configuration as table rows."""
        return self.rows_at(self.positions(config))

    @cached_property
    def _slices(self) -> dict[tuple[int, ...], pd.DataFrame]:
        return {}

    def rows_at(self, positions: Sequence[int]) -> pd.DataFrame:
        """The table's rows at these positions, sliced once per report (every column is copied: at thousands of
        runs the configurations' figures and their summaries once paid for it twice); read-only, as every slice."""
        key = tuple(positions)
        if key not in self._slices:
            self._slices[key] = self.table.iloc[list(key)]
        return self._slices[key]

    def attempts_of(self, config: Configuration) -> tuple[Attempt, ...]:
        """The benchmark attempts of one configuration, in its order (its passes at any of its seeds): those it holds
        (report/configurations.py), found by its identity only for one built by hand."""
        return config.attempts or tuple(self.attempts[p] for p in self.positions(config))

    def runs_of(self, config: Configuration) -> list[str]:
        """The run ids of one configuration's benchmark attempts."""
        return [a.run_id for a in self.attempts_of(config)]


def attempts_in(source: ReportAttempts | pd.DataFrame | Sequence[Attempt]) -> Sequence[Attempt]:
    """The attempts of a report: its measured attempts', its attempts table's (tracking/attempts_table.AttemptsTable),
    or, for a table made by hand (a test's, a slice), each row read back as an attempt."""
    if isinstance(source, pd.DataFrame):
        found = getattr(source, "attempts", None)
        if isinstance(found, tuple):
            return found
        return tuple(attempt_of_row(None, row) for row in source.to_dict("records"))
    return source.attempts if isinstance(source, ReportAttempts) else source


def figures(attempts: Sequence[Attempt], name: str) -> pd.Series:
    """One metric over the attempts, in their order (NaN where one did not record it): the pandas medians and means
    read it as they read the table's column."""
    return pd.Series([a.metrics.get(name) for a in attempts], dtype=float)


def median_of(attempts: Sequence[Attempt], name: str) -> float | None:
    """A metric's median over the attempts that recorded it, None when none did: the value pandas' median gives
    (the middle one, or the mean of the two middle ones), without a Series per configuration and metric."""
    values = [float(value) for a in attempts if (value := a.metrics.get(name)) is not None and not math.isnan(value)]
    return float(statistics.median(values)) if values else None


def recorded(a: Attempt, name: str) -> bool:
    """Whether the attempt recorded this metric (a value, not NaN)."""
    value = a.metrics.get(name)
    return value is not None and not math.isnan(value)
