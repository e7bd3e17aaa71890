"""Flagging passes whose measured clocks overlapped on one host, on the runs themselves.

The launcher calls `mark` after its pass is recorded: the pass and every earlier pass it overlapped
get the `gpucost.overlapped_with` tag, and their descriptions name each other. A pass still running
when this one ends is flagged when it ends itself. The reader finds the same overlaps from the
recorded spans (`core/measurement/overlap.py`), so the attempts table and report never depend on these tags.
"""

from __future__ import annotations

from mlflow.entities import RunTag
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.measurement.overlap import Interval, overlaps
from gpucost_mlflow.tracking import descriptions, schema, search

FROM, UNTIL = schema.MEASURED_SPAN


def _interval(run) -> Interval | None:
    metrics = run.data.metrics
    if FROM not in metrics or UNTIL not in metrics:
        return None
    return Interval(run.info.run_id, schema.run_facts(run).get(schema.HOST, ""), metrics[FROM], metrics[UNTIL])


def span_of(run_id: str, host: str, metrics: dict, experiment_id: str) -> tuple[Interval | None, str]:
    """A pass's measured span on its host and its experiment, from what its attempt records (no store read)."""
    if FROM not in metrics or UNTIL not in metrics:
        return None, experiment_id
    return Interval(run_id, host, metrics[FROM], metrics[UNTIL]), experiment_id


def mark(client: MlflowClient, run_id: str, known: tuple[Interval | None, str] | None = None) -> list[str]:
    """Tag and describe this run and the runs of its experiment whose measured span overlapped it; returns those.
    `known`: its span and experiment as its attempt recorded them (`span_of`), else read from the store."""
    run = client.get_run(run_id) if known is None else None
    mine, experiment_id = known if known is not None else (_interval(run), run.info.experiment_id)
    if mine is None or not mine.host:
        return []
    candidates = search.by_fact(client, experiment_id, schema.HOST, mine.host,
                                f"metrics.`{UNTIL}` > {mine.start!r}")
    spans = [i for i in (_interval(r) for r in candidates) if i is not None]
    if not any(i.run_id == run_id for i in spans):
        spans.append(mine)
    found = overlaps(spans)
    others = found.get(run_id, [])
    if not others:
        return []
    for target in [run_id, *others]:
        current = client.get_run(target)
        tagged = [item for item in current.data.tags.get(schema.OVERLAPPED_WITH, "").split(",") if item]
        names = ",".join(sorted(set(found.get(target, [])) | set(tagged)))
        note = descriptions.pass_note({**schema.run_facts(current), schema.OVERLAPPED_WITH: names},
                                      current.data.metrics)
        client.log_batch(target, tags=[RunTag(schema.OVERLAPPED_WITH, names), RunTag(schema.NOTE, note)])
    return others
