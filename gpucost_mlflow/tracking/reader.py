"""Reading attempts back from the tracking store: every attempted pass, failed ones included, as an `Attempt`
(tracking/recorded.py): the pass as it was written (its identity, settings, place, verdict, facts, metrics) and its
status as read now."""

from __future__ import annotations

import datetime as dt
import functools
import os
import socket
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.inputs.identity import Identity
from gpucost_mlflow.core.judging import verdicts
from gpucost_mlflow.core.judging.bounds import NOT_SHOWN
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.judging.verdicts import Check
from gpucost_mlflow.core.kinds import engines, registry
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.core.measurement.overlap import Interval, overlaps
from gpucost_mlflow.tracking import empty_cells, exclusions, heartbeat, schema
from gpucost_mlflow.tracking.attempts_table import row_of
from gpucost_mlflow.tracking.experiments import Experiment
from gpucost_mlflow.tracking.recorded import Attempt, Facts, Place, RecordedVerdict, RunTimes
from gpucost_mlflow.tracking.run_records import RunRecord, tagged


class _gc_paused:
    """Pause Python's cyclic garbage collector while the runs are read, then restore its state.

    Read through search_runs (tracking/run_records.py), a run becomes one object per tag, param and metric (~70 per
    pass); with the collector on, its repeated collections over those young objects cost about twice the read itself
    (benchmarks/report_scaling.py). The rows and their values are unchanged.
    """

    def __enter__(self):
        import gc

        self.enabled = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc):
        import gc

        if self.enabled:
            gc.enable()
        return False


def launcher_alive(tag: str) -> bool:
    """Whether the launcher recorded as host:pid is still running (only knowable on its own host)."""
    host, _, pid = tag.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recorded_identity(tags: dict, params: dict) -> Identity:
    """The configuration a run measured, as it recorded it (PROTOCOL.md §2; `tags`: its tags with its facts,
    schema.facts). A field recorded before it existed reads as what every such pass ran: the built-in classifier on
    torch, one lane; any other absent field is '' (not recorded)."""
    return _identity((tags.get(schema.DEVICE_NAME, ""), tags.get(schema.VARIANT, ""),
                      params.get(_WORKLOAD, registry.DEFAULT), params.get(_LANES, 1),
                      params.get(schema.MODEL_REVISION, ""), tags.get(schema.CORPUS_FINGERPRINT, ""),
                      params.get(_ENGINE, engines.DEFAULT), params.get(schema.SEED_TORCH, ""),
                      tags.get(schema.ENDPOINT, "")), tuple(map(params.get, _STACK_PARAMS, _BLANKS)))


@functools.lru_cache(maxsize=4096)
def _identity(recorded: tuple, stack: tuple[str, ...]) -> Identity:
    """One identity of the values its run recorded (`recorded_identity`'s, then its stack's): thousands of passes
    share a few, so each is kept (frozen, so shared: the report's groupings then find the same object)."""
    device, variant, workload, lanes, model_revision, corpus_fingerprint, engine, seed, endpoint = recorded
    return Identity(device=device, variant=variant, workload=workload, lanes=str(int(lanes)),
                    model_revision=model_revision, corpus_fingerprint=corpus_fingerprint, engine=engine, seed=seed,
                    endpoint=endpoint, **dict(zip(schema.STACK_IDENTITY, stack)))


_WORKLOAD, _LANES, _ENGINE = (f"{schema.SETTING_PREFIX}{key}" for key in ("workload", "lanes", "engine"))
_STACK_PARAMS = tuple(f"{schema.STACK_PREFIX}{key}" for key in schema.STACK_IDENTITY)


def attempt_row(run: RunRecord, now: dt.datetime | None = None) -> dict:
    """One attempts-table row; a measurement that is absent stays empty and the notes say why.

    A run left RUNNING is interrupted when its launcher is gone (on this host) or its heartbeat stopped (any host),
    judged at `now` (the current time unless told)."""
    return row_of(_read(run, now, {}))


def _read(run: RunRecord, now: dt.datetime | None, exported: dict[str, str]) -> Attempt:
    """The run as the pass wrote it, with its status as read now. `exported`: the file each workload exported
    before `gpucost.exported` was recorded, filled as workloads are met."""
    metrics, params = run.metrics, run.params
    setting_keys, fact_keys = _keys_of(tuple(params))
    tags = {**run.tags, **{key: params[key] for key in fact_keys}} if fact_keys else dict(run.tags)  # schema.facts
    identity = recorded_identity(tags, params)
    status, reason, excluded = status_of(run, now, tags)
    before = exclusions.details(tags) if excluded else {}
    measured_reason = before.get("reason_before", "") if excluded else reason
    exported_file = tags.get(schema.EXPORTED, "")
    if not exported_file and status != Status.RUNNING:
        if identity.workload not in exported:
            exported[identity.workload] = empty_cells.exported_before_the_tag(identity.workload)
        exported_file = exported[identity.workload]
    settings, recorded_settings = _settings_read(tuple(zip(setting_keys, map(params.__getitem__, setting_keys))),
                                                 identity.workload)
    place, facts, timings = (Place(*map(tags.get, PLACE, _BLANKS)), Facts(*map(tags.get, FACTS, _BLANKS)),
                             RunTimes(run.start_time, run.end_time))
    mfu = empty_cells.mfu_reason(metrics, status, measured_reason or reason, identity.workload)
    return Attempt(
        run_id=run.run_id, identity=identity, place=place,
        settings=settings, recorded_settings=recorded_settings,
        tokenizer_revision=params.get(schema.TOKENIZER_REVISION, ""), warmup=schema.warmup_from_params(params),
        corpus_order=params.get(schema.CORPUS_ORDER_DIGEST, ""),
        timings=timings,
        verdict=_verdict(tags.get(schema.QUALITY_VERDICT, ""), tags.get(schema.CORPUS_ACCEPTED, "true"),
                         tags.get(schema.CHECKS)) if schema.CHECKS in tags else
        RecordedVerdict(tags.get(schema.QUALITY_VERDICT, ""), (), ids_matched(tags), compared_with_reference(tags),
                        tags.get(schema.CORPUS_ACCEPTED, "true") == "true"),
        facts=facts, metrics=MappingProxyType(metrics),
        status=status, reason=reason, status_before_exclusion=before.get("status_before", ""),
        energy_reason=empty_cells.energy_reason(tags, metrics, status, measured_reason or reason),
        mfu_reason=mfu, stopped=tags.get(schema.RACE_STOPPED, ""),
        notes="; ".join(empty_cells.notes_of(run, empty_cells.Noted(status, reason, timings.wall_s, mfu, place.role,
                                                                    facts), excluded, measured_reason, before,
                                             exported_file)))


@functools.lru_cache(maxsize=256)
def _keys_of(keys: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Of a pass's param names, in their order, its settings' (`setting.*`) and its facts' (schema.facts): thousands
    of passes share a few sets of names, so each answer is kept."""
    return (tuple(key for key in keys if key.startswith(schema.SETTING_PREFIX)),
            tuple(key for key in keys if schema.is_fact(key)))


# The tags a Place and Facts are read from, in their fields' order.
PLACE = (schema.CAMPAIGN_ID, schema.PASS_INDEX, schema.ROUND, schema.POSITION, schema.ATTEMPT, schema.ROLE,
         schema.STAGE, schema.SETTLE_PLAN, schema.HOST, schema.BACKEND, schema.CONFIRMATION)
FACTS = (schema.PROTOCOL_DIGEST, schema.MEMORY_COUNTER, schema.CONTENDED, schema.THROTTLED, schema.STARVED,
         schema.COLD_SHAPES, schema.RACE_STOPPED)
_BLANKS = ("",) * max(len(PLACE), len(FACTS), len(_STACK_PARAMS))  # each absent tag or param reads ''


@functools.lru_cache(maxsize=1024)
def _settings_read(params: tuple[tuple[str, str], ...], workload: str) -> tuple[Settings | None, Mapping[str, Any]]:
    """A pass's `setting.*` params read back by its kind's record (tracking/schema.py `settings_from_params`), and
    what they hold; thousands of passes share a few settings, so each reading is kept (read-only)."""
    try:
        record = registry.of_workload(workload).settings_record()
    except KeyError:  # a kind no package declares now: the shared record
        record = Settings
    found = schema.settings_record(dict(params), record)
    return (schema.settings_from_params(dict(params), record) if found else None), MappingProxyType(found)


@functools.lru_cache(maxsize=1024)
def _verdict(quality_verdict: str, corpus_accepted: str, checks: str) -> RecordedVerdict:
    """A pass's verdict from its checks line, kept: thousands of passes share a few (frozen, so shared)."""
    tags = {schema.CHECKS: checks}
    return RecordedVerdict(quality_verdict, _checks(checks), ids_matched(tags), compared_with_reference(tags),
                           corpus_accepted == "true")


def checks_of(tags: dict) -> tuple[Check, ...]:
    """The pass's checks from its checks line (names and outcomes; each reason is in verdict.json), none before it."""
    return _checks(tags.get(schema.CHECKS, ""))


@functools.lru_cache(maxsize=1024)
def _checks(line: str) -> tuple[Check, ...]:
    found = []
    for part in filter(None, line.split(" · ")):
        head, _, names = part.partition(": ")
        found += [Check(name, head == "passed", "", head != NOT_SHOWN)
                  for name in filter(None, (item.strip() for item in names.split(",")))]
    return tuple(found)


def compared_with_reference(tags: dict) -> bool:
    """Whether the pass's checks compared it with the reference pass: from its checks line (from its per-check tags on
    passes before it)."""
    if schema.CHECKS in tags:
        return verdicts.judged_against_reference(tags[schema.CHECKS])
    return any(key.startswith(schema.CHECK_PREFIX + verdicts.REFERENCE_CHECK_PREFIX) for key in tags)


def ids_matched(tags: dict) -> bool:
    """Whether the pass's ids check passed: read from its checks line (from its own tag on passes before it)."""
    if schema.CHECKS in tags:
        return verdicts.outcomes(tags[schema.CHECKS]).get("ids", False)
    return tags.get(schema.IDS_MATCH, "") == "true"


def status_of(run: RunRecord, now: dt.datetime | None, tags: dict | None = None) -> tuple[str, str, bool]:
    """The status and reason of a run as read, and whether it is excluded: a RUNNING run whose launcher is gone or
    whose heartbeat stopped, or a run that ended before its attempt was recorded, is failed with why. `tags`: the
    run's tags with its facts (schema.facts), read from the run unless given."""
    tags = schema.facts(run.tags, run.params) if tags is None else tags
    status = tags.get(schema.STATUS, "")
    reason = tags.get(schema.STATUS_REASON, "")
    stale = heartbeat.stale_reason(tags, run.start_time, now) if run.status == "RUNNING" else ""
    if run.status == "RUNNING" and not launcher_alive(tags.get(schema.LAUNCHER, "")):
        status, reason = str(Status.FAILED), "interrupted (launcher gone, run left RUNNING)"
    elif stale:
        status, reason = str(Status.FAILED), stale
    elif run.status in ("FAILED", "KILLED") and status in ("", Status.RUNNING):
        status, reason = str(Status.FAILED), reason or "interrupted (run ended before the attempt was recorded)"
    # An excluded pass keeps its row; the cause, who and when are its reason (`gpucost exclude`, PROTOCOL.md §6).
    excluded = tags.get(schema.STATUS) == Status.EXCLUDED and bool(exclusions.details(tags)["cause"])
    if excluded:
        status, reason = str(Status.EXCLUDED), exclusions.describe(tags)
    return status, reason, excluded


def flag_overlaps(found: list[Attempt]) -> list[Attempt]:
    """The attempts with `overlapped_with` (and a note) for passes whose measured clocks overlapped on the same host."""
    start, end = schema.MEASURED_SPAN
    spans = [Interval(a.run_id, a.place.host, a.metrics[start], a.metrics[end]) for a in found
             if a.metrics.get(start) is not None and a.metrics.get(end) is not None]
    overlapped = overlaps(spans)
    return [_overlapped(a, overlapped[a.run_id]) if overlapped.get(a.run_id) else a for a in found]


def _overlapped(a: Attempt, others: list[str]) -> Attempt:
    said = f"overlapped (same host {a.place.host}): {', '.join(others)}"
    return replace(a, overlapped_with=",".join(others), notes="; ".join(filter(None, [said, a.notes])))


def carry_stops(found: list[Attempt]) -> list[Attempt]:
    """The attempts with a race's stop, recorded on the last pass of the configuration it stopped, carried to every
    attempt of that configuration (its variant on its device) in that campaign: the attempts table's `stopped`."""
    def key(a: Attempt) -> tuple[str, str, str]:
        return a.place.campaign_id, a.identity.variant, a.identity.device

    stops = {key(a): a.facts.stopped for a in found if a.facts.stopped}
    return [a if stops.get(key(a), "") == a.stopped else replace(a, stopped=stops.get(key(a), "")) for a in found]


def attempts(client: MlflowClient, experiment: Experiment, now: dt.datetime | None = None) -> list[Attempt]:
    """Every gpucost pass of the experiment as an attempt, oldest first; running passes are judged at `now` (the
    current time unless told)."""
    with _gc_paused():
        return attempts_of(tagged(client, experiment.id, schema.VARIANT), now)


def attempts_of(records: list[RunRecord], now: dt.datetime | None = None) -> list[Attempt]:
    """The attempts of these runs in their order, each with its identity as recorded; passes whose measured clocks
    overlapped on one host say so (`overlapped_with`)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    exported: dict[str, str] = {}
    return carry_stops(flag_overlaps([_read(run, now, exported) for run in records]))
