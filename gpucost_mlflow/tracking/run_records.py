"""The runs carrying one tag, read as plain records: straight from the tables of a SQL store, else through search_runs.

`search_runs` builds an ORM object per tag, param and metric and then an MLflow entity from each (~70 per pass);
at thousands of passes that is most of the report's time (docs/benchmarks.md, report scaling). A store MLflow
keeps in SQL (`sqlite:///`, `postgresql://`) is asked here for the same runs, in the same order, as rows of
plain columns: the records are equal to those built from `search_runs` (tests/test_run_records.py).
A server (`http://`) is read through `search_runs`, page after page.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field

from mlflow.entities import LifecycleStage, Run
from mlflow.tracking import MlflowClient

from gpucost_mlflow.tracking import search


@dataclass
class RunRecord:
    """What the attempts table reads of one run: its info fields and its tags, params and latest metrics."""

    run_id: str
    status: str
    start_time: int | None
    end_time: int | None
    artifact_uri: str
    tags: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, run: Run) -> RunRecord:
        """The record of a run `search_runs` returned."""
        info, data = run.info, run.data
        return cls(info.run_id, info.status, info.start_time, info.end_time, info.artifact_uri,
                   dict(data.tags), dict(data.params), dict(data.metrics))


def tagged(client: MlflowClient, experiment_id: str, tag: str, value: str | None = None) -> list[RunRecord]:
    """The experiment's active runs that carry `tag` (with this value; any value when None), oldest first (ties by
    run id), as records."""
    sql_store = _sql_store(client)
    if sql_store is None:
        quoted = value.replace("'", "\\'") if value is not None else ""
        runs = search.all_runs(client, experiment_id,
                               f"tags.`{tag}` = '{quoted}'" if value is not None else f"tags.`{tag}` LIKE '%'")
        return [RunRecord.of(run) for run in runs]
    return _from_tables(sql_store, experiment_id, tag, value)


def _sql_store(client: MlflowClient):
    """The client's store when MLflow keeps it in plain SQL tables, else None. Only SqlAlchemyStore itself: its
    subclasses (workspaces) filter which experiments a search sees, and are asked through search_runs."""
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    store = getattr(getattr(client, "_tracking_client", None), "store", None)
    return store if type(store) is SqlAlchemyStore else None


def _from_tables(store, experiment_id: str, tag: str, wanted: str | None) -> list[RunRecord]:
    """One query for the runs, one each for their tags, params and latest metrics: plain rows, no ORM objects."""
    from mlflow.store.tracking.dbmodels.models import SqlLatestMetric, SqlParam, SqlRun, SqlTag
    from sqlalchemy import case, select

    carrying = select(SqlTag.run_uuid).where(SqlTag.key == tag,
                                             SqlTag.value.like("%") if wanted is None else SqlTag.value == wanted)
    chosen = select(SqlRun.run_uuid).where(SqlRun.experiment_id == int(experiment_id),
                                           SqlRun.lifecycle_stage == LifecycleStage.ACTIVE,
                                           SqlRun.run_uuid.in_(carrying))
    with store.ManagedSessionMaker() as session:
        connection = session.connection()  # Core rows: the ORM's per-row bookkeeping is what this read avoids
        # search_runs' order for "attributes.start_time ASC": runs without a start time last, then the run id.
        rows = connection.execute(
            select(SqlRun.run_uuid, SqlRun.status, SqlRun.start_time, SqlRun.end_time, SqlRun.artifact_uri)
            .where(SqlRun.run_uuid.in_(chosen))
            .order_by(case((SqlRun.start_time.is_(None), 1), else_=0), SqlRun.start_time, SqlRun.run_uuid)
        ).all()
        records = {run_id: RunRecord(run_id, status, start, end, uri) for run_id, status, start, end, uri in rows}
        # A run that began carrying the tag since the first query is left out: it waits for the next read.
        by_run = _by_run if connection.dialect.name == "sqlite" and sqlite3.sqlite_version_info >= (3, 38) else _group
        by_run(connection, SqlTag, chosen, {r.run_id: r.tags for r in records.values()})
        by_run(connection, SqlParam, chosen, {r.run_id: r.params for r in records.values()})
        metrics = {r.run_id: r.metrics for r in records.values()}
        nan = float("nan")
        for run_id, key, value, is_nan in _plain_rows(connection, select(
                SqlLatestMetric.run_uuid, SqlLatestMetric.key, SqlLatestMetric.value, SqlLatestMetric.is_nan)
                .where(SqlLatestMetric.run_uuid.in_(chosen))):
            found = metrics.get(run_id)
            if found is not None:
                found[key] = nan if is_nan else float(value)
    return list(records.values())


def _group(connection, table, chosen, into: dict[str, dict[str, str]]) -> None:
    """Each (run id, key, value) row of the chosen runs' tags or params (`table`) into its run's dict (`into`: run
    id -> dict); a run not there is skipped."""
    from sqlalchemy import select

    get = into.get
    for run_id, key, value in _plain_rows(connection, select(table.run_uuid, table.key, table.value)
                                          .where(table.run_uuid.in_(chosen))):
        found = get(run_id)
        if found is not None:
            found[key] = value


def _by_run(connection, table, chosen, into: dict[str, dict[str, str]]) -> None:
    """As `_group`, SQLite folding each run's rows into one JSON object (`json_group_object`, the rows in the order
    `_group` reads them): one row and one string a run instead of one row and three strings a tag or param, and
    `json.loads` builds the dict (a third of the read at thousands of runs: docs/benchmarks.md)."""
    from sqlalchemy import func, select

    get, loads = into.get, json.loads
    for run_id, pairs in _plain_rows(connection, select(table.run_uuid, func.json_group_object(table.key, table.value))
                                     .where(table.run_uuid.in_(chosen)).group_by(table.run_uuid)):
        found = get(run_id)
        if found is not None:
            found.update(loads(pairs))


def _plain_rows(connection, statement) -> list[tuple]:
    """The statement's rows as the database driver returns them, fetched at once: strings and numbers need none of
    SQLAlchemy's per-row processing, which cost most of the read at thousands of runs (docs/benchmarks.md)."""
    result = connection.execute(statement)
    try:
        return result.cursor.fetchall()
    finally:
        result.close()
